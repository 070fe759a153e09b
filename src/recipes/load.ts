import { readFileSync } from "node:fs";
import type { z } from "zod";
import { AgentId } from "../contracts/ids.ts";
import { ConclaveError } from "../errors.ts";
import { type Expr, parseExpression } from "./expression.ts";
import { graphShape, RecipeShapeError, targetsOf } from "./forks.ts";
import { pathSegments } from "./paths.ts";
import { DEFAULT_POLICY, type Persistence, type Recipe, type RecipeNode, type Transition } from "./recipe.ts";
import type { FullTopology, GraphRecipeDocument as GraphDocument } from "./schema.ts";
import { parseGraphDocument, WorkflowRecipeDocument } from "./schema.ts";
import { parseRecipeText, type RecipeIssue, RecipeValidationError } from "./text.ts";
import { agentToolsOf, toolRisksOf } from "./toolRefs.ts";

// Loading starts from text and ends naming the agents a recipe calls: one import for callers.
export { agentRefsOf, checkAgentRefs } from "./agentRefs.ts";
export { MAX_RECIPE_TEXT, parseRecipeText, type RecipeIssue, RecipeValidationError } from "./text.ts";

/** Most nodes (or steps) in one recipe. */
export const MAX_RECIPE_NODES = 500;

/** How `loadRecipe` checks a document. */
export interface LoadOptions {
  /** Names of the logic handlers the runner has: a `logic` step runs only with a handler of its id. */
  logicHandlers?: Iterable<string>;
  /**
   * Check the recipe can run (default): structural problems are errors even
   * in a `draft` topology, abstract agent references and generative nodes
   * are refused. `false` only validates the document (`conclave recipe validate --draft`).
   */
  forRun?: boolean;
}

/** Reads, parses and loads a recipe file. */
export function loadRecipeFile(path: string, options: LoadOptions = {}): Recipe {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConclaveError("usage", `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  try {
    return loadRecipe(parseRecipeText(text, path), options);
  } catch (error) {
    if (error instanceof RecipeValidationError) throw new RecipeValidationError(error.issues, path);
    throw error;
  }
}

/** `a.b[2].c` from a zod issue's path. */
const pathText = (segments: readonly PropertyKey[]): string =>
  segments.reduce<string>(
    (text, segment) =>
      typeof segment === "number" ? `${text}[${segment}]` : text ? `${text}.${String(segment)}` : String(segment),
    "",
  ) || "(document)";

const zodIssues = (error: z.ZodError, prefix: readonly PropertyKey[] = []): RecipeIssue[] =>
  error.issues.map((issue) => ({ path: pathText([...prefix, ...issue.path]), message: issue.message }));

/**
 * Loads a recipe document (either shape, already parsed) into the `Recipe`
 * Conclave runs: checks it against the format's schema, then the rules the
 * format adds (ids, routes, edges, published recipes, logic steps, agent
 * ids, conditions, forks), collecting every issue. Throws
 * RecipeValidationError naming each issue's path; nothing from the document
 * is ever evaluated.
 */
export function loadRecipe(document: unknown, options: LoadOptions = {}): Recipe {
  if (typeof document !== "object" || document === null || Array.isArray(document))
    throw new RecipeValidationError([{ path: "(document)", message: "a recipe is an object (YAML mapping)" }]);
  const record = document as Record<string, unknown>;
  if (record.apiVersion !== "coreason.ai/v2")
    throw new RecipeValidationError([
      { path: "apiVersion", message: `must be coreason.ai/v2 (got ${JSON.stringify(record.apiVersion)})` },
    ]);
  const context = new LoadContext(options);
  let recipe: Recipe | null = null;
  if ("workflow" in record) recipe = context.workflow(record);
  else if ("topology" in record) recipe = context.graph(record);
  else context.issue("(document)", "neither `topology` (a graph recipe) nor `workflow` (a workflow manifest)");
  if (recipe) context.check(recipe);
  if (context.issues.length > 0 || !recipe) throw new RecipeValidationError(context.issues);
  return recipe;
}

const PERSISTENCE: Record<string, Persistence> = {
  ephemeral: "nats",
  memory: "nats",
  nats: "nats",
  redis: "redis",
  postgres: "postgres",
};

class LoadContext {
  readonly issues: RecipeIssue[] = [];
  readonly #handlers: Set<string>;
  readonly #forRun: boolean;
  /** A draft topology's structure is only checked when it is to run. */
  #structural = true;
  /**
   * The graph's edges by index: an edge from a node the recipe does not have
   * belongs to no node's transitions, so only its own entry can report it.
   */
  #edges: { source: string }[] = [];

  constructor(options: LoadOptions) {
    this.#handlers = new Set(options.logicHandlers ?? []);
    this.#forRun = options.forRun ?? true;
  }

  issue(path: string, message: string): void {
    this.issues.push({ path, message });
  }

  #condition(path: string, source: string): Expr | undefined {
    try {
      return parseExpression(source);
    } catch (error) {
      this.issue(path, (error as Error).message);
      return undefined;
    }
  }

  #agentId(path: string, id: string): string {
    if (!AgentId.safeParse(id).success)
      this.issue(path, `'${id}' is not an agent id (1-3 lowercase tokens joined by dots, e.g. acme.writer)`);
    return id;
  }

  graph(record: Record<string, unknown>): Recipe | null {
    const parsed = parseGraphDocument(record);
    if (!parsed.success) {
      this.issues.push(...zodIssues(parsed.error));
      return null;
    }
    const doc = parsed.data;
    const topology = normalTopology(doc.topology);
    const linear = topology.base !== "topology.nodes";
    this.#structural = this.#forRun || topology.status !== "draft";
    const at = (index: number) => (topology.base === "topology" ? `topology[${index}]` : `${topology.base}[${index}]`);
    const outgoing = new Map<string, Transition[]>();
    this.#edges = topology.edges;
    topology.edges.forEach((edge, index) => {
      const when = edge.condition ? this.#condition(`topology.edges[${index}].condition`, edge.condition) : undefined;
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
          if (typeof node.agent_ref === "string") agent = this.#agentId(`${path}.agent_ref`, node.agent_ref);
          else if (doc.status === "published" || this.#forRun)
            this.issue(
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
            judge: this.#agentId(`${path}.evaluator_agent_ref`, node.evaluator_agent_ref),
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
          this.issue(`${path}.type`, "generative nodes are not supported by Conclave (yet): the recipe cannot run");
          break;
      }
    });
    if (nodes.length === 0 && topology.nodes.length === 0)
      this.issue(topology.base, "a recipe needs at least one node");
    const policy = doc.policy;
    return {
      name: doc.metadata.name,
      ...(doc.metadata.version ? { version: doc.metadata.version } : {}),
      shape: "graph",
      status: doc.status,
      ...(doc.metadata.description ? { description: doc.metadata.description } : {}),
      provenance: provenanceOf(doc.metadata),
      ...(doc.interface.inputs ? { inputs_schema: doc.interface.inputs } : {}),
      ...(doc.interface.outputs ? { outputs_schema: doc.interface.outputs } : {}),
      ...(doc.state?.properties ? { state_properties: doc.state.properties } : {}),
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
      },
      entry: topology.entry_point ?? topology.nodes[0]?.id ?? "",
      nodes,
    };
  }

  workflow(record: Record<string, unknown>): Recipe | null {
    const parsed = WorkflowRecipeDocument.safeParse(record);
    if (!parsed.success) {
      this.issues.push(...zodIssues(parsed.error));
      return null;
    }
    const doc = parsed.data;
    if (doc.kind === "Agent") {
      this.issue("kind", "kind Agent describes one agent, not a runnable recipe");
      return null;
    }
    const agentOf = (path: string, name: string): string => {
      const definition = doc.definitions[name];
      if (definition?.type === "agent")
        return this.#agentId(`definitions.${name}.id`, AgentId.safeParse(definition.id).success ? definition.id : name);
      if (definition?.type === "tool") this.issue(path, `'${name}' is a tool definition, not an agent`);
      return this.#agentId(path, name);
    };
    /** The agents an agent definition may delegate to (agent definitions or agent ids), as agent ids. */
    const delegatesOf = (name: string): { delegates?: string[] } => {
      const definition = doc.definitions[name];
      if (definition?.type !== "agent" || !definition.delegates?.length) return {};
      return {
        delegates: definition.delegates.map((ref, index) => agentOf(`definitions.${name}.delegates.${index}`, ref)),
      };
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
            ...agentToolsOf(doc.definitions, step.agent, `${path}.agent`, (at, message) => this.issue(at, message)),
            ...delegatesOf(step.agent),
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
                const when = this.#condition(`${path}.cases["${condition}"]`, condition);
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
          if (!this.#handlers.has(id)) {
            this.issue(
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
    if (nodes.length === 0) this.issue("workflow.steps", "a workflow needs at least one step");
    const backend = doc.state?.backend ?? "memory";
    const persistence = PERSISTENCE[backend];
    if (!persistence) this.issue("state.backend", `unknown backend '${backend}' (memory, redis or postgres)`);
    const policy = doc.policy;
    return {
      name: doc.metadata.name,
      ...(doc.metadata.version ? { version: doc.metadata.version } : {}),
      shape: "workflow",
      ...toolRisksOf(doc.definitions),
      status: "published",
      ...(doc.metadata.description ? { description: doc.metadata.description } : {}),
      provenance: provenanceOf(doc.metadata),
      ...(doc.interface.inputs ? { inputs_schema: doc.interface.inputs } : {}),
      ...(doc.interface.outputs ? { outputs_schema: doc.interface.outputs } : {}),
      ...(doc.state?.data_schema ? { state_properties: doc.state.data_schema } : {}),
      persistence: persistence ?? "nats",
      constraints: [],
      policy: {
        max_retries: policy?.max_retries ?? 3,
        ...(policy?.timeout !== undefined ? { timeout_seconds: policy.timeout } : {}),
        execution_mode: policy?.execution_mode ?? "sequential",
        max_steps: policy?.max_steps ?? DEFAULT_POLICY.max_steps,
        human_in_the_loop: policy?.human_in_the_loop ?? false,
        ...(policy?.tools ? { tools: policy.tools } : {}),
      },
      entry: doc.workflow.start ?? nodes[0]?.id ?? "",
      nodes,
    };
  }

  /** The structural rules: unique ids, known targets, a known entry, supported forks. */
  check(recipe: Recipe): void {
    if (recipe.nodes.length > MAX_RECIPE_NODES)
      this.issue("(document)", `${recipe.nodes.length} nodes: at most ${MAX_RECIPE_NODES}`);
    const ids = new Set<string>();
    for (const node of recipe.nodes) {
      if (ids.has(node.id)) this.issue(`${node.at}.id`, `duplicate node id '${node.id}'`);
      ids.add(node.id);
    }
    // Every blackboard path a node names must be one (no empty segment, nothing that reaches a prototype).
    const path = (at: string, value: string | undefined) => {
      if (value === undefined) return;
      try {
        pathSegments(value);
      } catch (error) {
        this.issue(at, (error as Error).message);
      }
    };
    for (const node of recipe.nodes) {
      if ("output_key" in node) path(`${node.at}.output_key`, node.output_key);
      if (node.kind === "agent")
        for (const [name, source] of Object.entries(node.inputs_map)) path(`${node.at}.inputs_map.${name}`, source);
      if (node.kind === "router") path(`${node.at}.input_key`, node.input_key);
      if (node.kind === "evaluator") {
        path(`${node.at}.target_variable`, node.target_variable);
        path(`${node.at}.feedback_variable`, node.feedback_variable);
      }
    }
    for (const [index, constraint] of recipe.constraints.entries())
      path(`requirements[${index}].variable`, constraint.variable);
    if (!this.#structural && recipe.status !== "published") return;
    const list = [...ids].slice(0, 12).join(", ");
    if (!ids.has(recipe.entry))
      this.issue(
        recipe.shape === "graph" ? "topology.entry_point" : "workflow.start",
        `unknown node '${recipe.entry}' (nodes: ${list})`,
      );
    for (const node of recipe.nodes)
      for (const target of targetsOf(node))
        if (!ids.has(target)) this.issue(node.at, `leads to unknown node '${target}' (nodes: ${list})`);
    this.#edges.forEach((edge, index) => {
      if (!ids.has(edge.source))
        this.issue(`topology.edges[${index}].source`, `unknown node '${edge.source}' (nodes: ${list})`);
    });
    if (this.issues.length > 0) return;
    try {
      graphShape(recipe);
    } catch (error) {
      if (error instanceof RecipeShapeError) this.issues.push(...error.issues);
      else throw error;
    }
  }
}

type GraphDocumentNode = GraphDocument["topology"] extends infer T
  ? T extends readonly (infer N)[]
    ? N
    : never
  : never;

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

function provenanceOf(metadata: {
  generated_by?: string | undefined;
  confidence_score?: number | undefined;
  generation_rationale?: string | undefined;
  original_user_intent?: string | undefined;
}): Recipe["provenance"] {
  return {
    ...(metadata.generated_by ? { generated_by: metadata.generated_by } : {}),
    ...(metadata.confidence_score !== undefined ? { confidence_score: metadata.confidence_score } : {}),
    ...(metadata.generation_rationale ? { generation_rationale: metadata.generation_rationale } : {}),
    ...(metadata.original_user_intent ? { original_user_intent: metadata.original_user_intent } : {}),
  };
}
