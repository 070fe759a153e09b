import { AgentId } from "../contracts/ids.ts";
import { PERSISTENCE, provenanceOf } from "./documentFields.ts";
import { type LoadIssues, zodIssues } from "./loadIssues.ts";
import { DEFAULT_POLICY, type Recipe, type RecipeNode } from "./recipe.ts";
import { remoteAgentsOf } from "./remoteAgentRefs.ts";
import { WorkflowRecipeDocument } from "./schema.ts";
import { agentToolsOf, toolRisksOf } from "./toolRefs.ts";

/**
 * A workflow manifest document (`workflow`) as the `Recipe` Conclave runs;
 * null when it does not match the schema or is a `kind: Agent` document.
 * Every issue found is added to `issues`.
 *
 * `logicHandlers`: the names of the logic handlers the runner has (a `logic`
 * step runs only with a handler of its id).
 */
export function workflowRecipe(
  record: Record<string, unknown>,
  issues: LoadIssues,
  logicHandlers: ReadonlySet<string>,
): Recipe | null {
  const parsed = WorkflowRecipeDocument.safeParse(record);
  if (!parsed.success) {
    issues.issues.push(...zodIssues(parsed.error));
    return null;
  }
  const doc = parsed.data;
  if (doc.kind === "Agent") {
    issues.issue("kind", "kind Agent describes one agent, not a runnable recipe");
    return null;
  }
  const agentOf = (path: string, name: string): string => {
    const definition = doc.definitions[name];
    if (definition?.type === "agent")
      return issues.agentId(`definitions.${name}.id`, AgentId.safeParse(definition.id).success ? definition.id : name);
    if (definition?.type === "tool") issues.issue(path, `'${name}' is a tool definition, not an agent`);
    return issues.agentId(path, name);
  };
  /** The agents an agent definition may delegate to (agent definitions or agent ids), as agent ids. */
  const delegatesOf = (name: string): { delegates?: string[] } => {
    const definition = doc.definitions[name];
    if (definition?.type !== "agent" || !definition.delegates?.length) return {};
    return {
      delegates: definition.delegates.map((ref, index) => agentOf(`definitions.${name}.delegates.${index}`, ref)),
    };
  };
  /** The collections a step's context is searched in: its own `knowledge`, else its agent definition's. */
  const knowledgeOf = (own: string[] | undefined, name: string): { knowledge?: string[] } => {
    const definition = doc.definitions[name];
    const named = own ?? (definition?.type === "agent" ? definition.knowledge : undefined);
    return named?.length ? { knowledge: [...new Set(named)] } : {};
  };
  /** The skills a step's agent is given besides the recipe's: its agent definition's, then its own. */
  const skillsOf = (own: string[] | undefined, name: string): { skills?: string[] } => {
    const definition = doc.definitions[name];
    const named = [...(definition?.type === "agent" ? (definition.skills ?? []) : []), ...(own ?? [])];
    return named.length > 0 ? { skills: [...new Set(named)] } : {};
  };
  const nodes: RecipeNode[] = [];
  for (const [id, step] of Object.entries(doc.workflow.steps)) {
    const path = `workflow.steps.${id}`;
    const next = step.type !== "switch" && step.next ? [{ target: step.next }] : [];
    switch (step.type) {
      case "agent":
        nodes.push({
          kind: "agent",
          id,
          at: path,
          agent: agentOf(`${path}.agent`, step.agent),
          ...(step.system_prompt ? { system_prompt: step.system_prompt } : {}),
          inputs_map: step.inputs ?? {},
          output_key: step.output_key ?? id,
          ...agentToolsOf(doc.definitions, step.agent, `${path}.agent`, (at, message) => issues.issue(at, message)),
          ...delegatesOf(step.agent),
          ...knowledgeOf(step.knowledge, step.agent),
          ...skillsOf(step.skills, step.agent),
          next,
        });
        break;
      case "switch":
        nodes.push({
          kind: "switch",
          id,
          at: path,
          ...(step.default ? { default: step.default } : {}),
          next: [
            ...Object.entries(step.cases).map(([condition, target]) => {
              const when = issues.condition(`${path}.cases["${condition}"]`, condition);
              return { target, label: condition, ...(when ? { when } : {}) };
            }),
            ...(step.default ? [{ target: step.default, label: "default" }] : []),
          ],
        });
        break;
      case "council":
        nodes.push({
          kind: "council",
          id,
          at: path,
          voters: step.voters.map((voter, index) => agentOf(`${path}.voters[${index}]`, voter)),
          strategy: step.strategy,
          output_key: step.output_key ?? id,
          next,
        });
        break;
      case "logic":
        if (!logicHandlers.has(id)) {
          issues.issue(
            path,
            `logic step '${id}' runs host code; Conclave never evaluates code from a document — register a handler named '${id}' with the runner (recipes.logicHandlers) to run it`,
          );
        }
        nodes.push({ kind: "logic", id, at: path, handler: id, output_key: id, next });
        break;
      case "human":
        nodes.push({
          kind: "human",
          id,
          at: path,
          prompt: step.prompt,
          ...(step.timeout_seconds !== undefined ? { timeout_seconds: step.timeout_seconds } : {}),
          ...(step.required_role ? { required_role: step.required_role } : {}),
          ...(step.timeout_route ? { timeout_route: step.timeout_route } : {}),
          output_key: step.output_key ?? id,
          next,
        });
        break;
    }
  }
  if (nodes.length === 0) issues.issue("workflow.steps", "a workflow needs at least one step");
  const backend = doc.state?.backend ?? "memory";
  const persistence = PERSISTENCE[backend];
  if (!persistence) issues.issue("state.backend", `unknown backend '${backend}' (memory, redis or postgres)`);
  const policy = doc.policy;
  return {
    name: doc.metadata.name,
    ...(doc.metadata.version ? { version: doc.metadata.version } : {}),
    shape: "workflow",
    ...toolRisksOf(doc.definitions),
    ...remoteAgentsOf(doc.definitions, (at, message) => issues.issue(at, message)),
    status: "published",
    ...(doc.metadata.description ? { description: doc.metadata.description } : {}),
    provenance: provenanceOf(doc.metadata),
    ...(doc.interface.inputs ? { inputs_schema: doc.interface.inputs } : {}),
    ...(doc.interface.outputs ? { outputs_schema: doc.interface.outputs } : {}),
    ...(doc.state?.data_schema ? { state_properties: stateProperties(doc.state.data_schema) } : {}),
    ...(doc.skills?.length ? { skills: [...new Set(doc.skills)] } : {}),
    persistence: persistence ?? "nats",
    constraints: [],
    policy: {
      max_retries: policy?.max_retries ?? 3,
      ...(policy?.timeout !== undefined ? { timeout_seconds: policy.timeout } : {}),
      execution_mode: policy?.execution_mode ?? "sequential",
      max_steps: policy?.max_steps ?? DEFAULT_POLICY.max_steps,
      human_in_the_loop: policy?.human_in_the_loop ?? false,
      ...(policy?.tools ? { tools: policy.tools } : {}),
      ...(policy?.memory ? { memory: policy.memory } : {}),
    },
    entry: doc.workflow.start ?? nodes[0]?.id ?? "",
    nodes,
  };
}

/**
 * A workflow's `data_schema` as the variables' schemas: a map of variable to
 * JSON Schema, or a whole object schema (`type: object` with `properties`),
 * whose properties are the variables.
 */
function stateProperties(dataSchema: Record<string, unknown>): Record<string, unknown> {
  const { type, properties } = dataSchema;
  if (type === "object" && typeof properties === "object" && properties !== null && !Array.isArray(properties))
    return properties as Record<string, unknown>;
  return dataSchema;
}
