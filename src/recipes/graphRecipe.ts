import { PERSISTENCE, provenanceOf } from "./documentFields.ts";
import { type LoadIssues, zodIssues } from "./loadIssues.ts";
import { DEFAULT_POLICY, type Recipe, type RecipeNode, type Transition } from "./recipe.ts";
import type { FullTopology, GraphRecipeDocument as GraphDocument } from "./schema.ts";
import { parseGraphDocument } from "./schema.ts";
import type { StructureScope } from "./structuralChecks.ts";

type GraphDocumentNode = GraphDocument["topology"] extends infer T
  ? T extends readonly (infer N)[]
    ? N
    : never
  : never;

/**
 * A graph recipe document (`topology`) as the `Recipe` Conclave runs, with
 * how far its structure is to be checked; null when it does not match the
 * schema. Every issue found is added to `issues`.
 *
 * `forRun`: the recipe is to run, so abstract agent references are refused
 * and a draft topology's structure is checked too.
 */
export function graphRecipe(
  record: Record<string, unknown>,
  issues: LoadIssues,
  forRun: boolean,
): { recipe: Recipe; scope: StructureScope } | null {
  const parsed = parseGraphDocument(record);
  if (!parsed.success) {
    issues.issues.push(...zodIssues(parsed.error));
    return null;
  }
  const doc = parsed.data;
  const topology = normalTopology(doc.topology);
  const linear = topology.base !== "topology.nodes";
  const structural = forRun || topology.status !== "draft";
  const at = (index: number) => (topology.base === "topology" ? `topology[${index}]` : `${topology.base}[${index}]`);
  const outgoing = new Map<string, Transition[]>();
  topology.edges.forEach((edge, index) => {
    const when = edge.condition ? issues.condition(`topology.edges[${index}].condition`, edge.condition) : undefined;
    const list = outgoing.get(edge.source) ?? [];
    list.push({
      target: edge.target,
      ...(edge.condition ? { label: edge.condition } : {}),
      ...(when ? { when } : {}),
    });
    outgoing.set(edge.source, list);
  });
  const nodes: RecipeNode[] = [];
  topology.nodes.forEach((node, index) => {
    const path = at(index);
    const next = linear
      ? topology.nodes[index + 1]
        ? [{ target: topology.nodes[index + 1]!.id }]
        : []
      : (outgoing.get(node.id) ?? []);
    switch (node.type) {
      case "agent": {
        let agent = "";
        if (typeof node.agent_ref === "string") agent = issues.agentId(`${path}.agent_ref`, node.agent_ref);
        else if (doc.status === "published" || forRun)
          issues.issue(
            `${path}.agent_ref`,
            `abstract agent reference (intent '${node.agent_ref.intent}') must be resolved to an agent id before the recipe ${doc.status === "published" ? "is published" : "runs"}`,
          );
        nodes.push({
          kind: "agent",
          id: node.id,
          at: path,
          agent,
          ...(node.system_prompt_override ? { system_prompt: node.system_prompt_override } : {}),
          inputs_map: node.inputs_map,
          output_key: node.output_key ?? node.id,
          ...(node.knowledge ? { knowledge: [...new Set(node.knowledge)] } : {}),
          ...(node.skills?.length ? { skills: [...new Set(node.skills)] } : {}),
          next,
        });
        break;
      }
      case "router":
        nodes.push({
          kind: "router",
          id: node.id,
          at: path,
          input_key: node.input_key,
          routes: node.routes,
          ...(node.default_route ? { default_route: node.default_route } : {}),
          next: [
            ...Object.entries(node.routes).map(([value, target]) => ({ target, label: value })),
            ...(node.default_route ? [{ target: node.default_route, label: "default" }] : []),
          ],
        });
        break;
      case "evaluator":
        nodes.push({
          kind: "evaluator",
          id: node.id,
          at: path,
          target_variable: node.target_variable,
          judge: issues.agentId(`${path}.evaluator_agent_ref`, node.evaluator_agent_ref),
          profile: node.evaluation_profile,
          pass_threshold: node.pass_threshold,
          max_refinements: node.max_refinements,
          pass_route: node.pass_route,
          fail_route: node.fail_route,
          feedback_variable: node.feedback_variable ?? `${node.id}_feedback`,
          next: [
            { target: node.pass_route, label: "pass" },
            { target: node.fail_route, label: "fail" },
          ],
        });
        break;
      case "human":
        nodes.push({
          kind: "human",
          id: node.id,
          at: path,
          prompt: node.prompt,
          ...(node.timeout_seconds !== undefined ? { timeout_seconds: node.timeout_seconds } : {}),
          ...(node.required_role ? { required_role: node.required_role } : {}),
          ...(node.timeout_route ? { timeout_route: node.timeout_route } : {}),
          output_key: node.output_key ?? node.id,
          next,
        });
        break;
      case "generative":
        issues.issue(`${path}.type`, "generative nodes are not supported by Conclave (yet): the recipe cannot run");
        break;
    }
  });
  if (nodes.length === 0 && topology.nodes.length === 0)
    issues.issue(topology.base, "a recipe needs at least one node");
  const policy = doc.policy;
  const recipe: Recipe = {
    name: doc.metadata.name,
    ...(doc.metadata.version ? { version: doc.metadata.version } : {}),
    shape: "graph",
    status: doc.status,
    ...(doc.metadata.description ? { description: doc.metadata.description } : {}),
    provenance: provenanceOf(doc.metadata),
    ...(doc.interface.inputs ? { inputs_schema: doc.interface.inputs } : {}),
    ...(doc.interface.outputs ? { outputs_schema: doc.interface.outputs } : {}),
    ...(doc.state?.properties ? { state_properties: doc.state.properties } : {}),
    ...(doc.skills?.length ? { skills: [...new Set(doc.skills)] } : {}),
    persistence: PERSISTENCE[doc.state?.persistence ?? "ephemeral"]!,
    constraints: doc.requirements.map((constraint) => ({
      variable: constraint.variable,
      operator: constraint.operator,
      value: constraint.value,
      required: constraint.required,
      ...(constraint.error_message ? { error_message: constraint.error_message } : {}),
    })),
    policy: {
      max_retries: policy?.max_retries ?? 0,
      ...(policy?.timeout_seconds !== undefined ? { timeout_seconds: policy.timeout_seconds } : {}),
      execution_mode: policy?.execution_mode ?? "sequential",
      max_steps: policy?.max_steps ?? DEFAULT_POLICY.max_steps,
      human_in_the_loop: policy?.human_in_the_loop ?? false,
      ...(policy?.memory ? { memory: policy.memory } : {}),
    },
    entry: topology.entry_point ?? topology.nodes[0]?.id ?? "",
    nodes,
  };
  return { recipe, scope: { structural, edges: topology.edges } };
}

/** A topology in its full form: the shorthand lists are linear chains. */
function normalTopology(topology: GraphDocument["topology"]): {
  nodes: GraphDocumentNode[];
  edges: { source: string; target: string; condition?: string | undefined }[];
  status: "draft" | "valid";
  entry_point?: string | undefined;
  /** Where its nodes are in the document. */
  base: "topology" | "topology.steps" | "topology.nodes";
} {
  if (Array.isArray(topology)) return { nodes: topology, edges: [], status: "valid", base: "topology" };
  if (Array.isArray((topology as { nodes?: unknown }).nodes))
    return { ...(topology as FullTopology), base: "topology.nodes" };
  return {
    nodes: (topology as { steps: GraphDocumentNode[] }).steps,
    edges: [],
    status: "valid",
    base: "topology.steps",
  };
}
