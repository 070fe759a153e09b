/**
 * The recipe format (`apiVersion: coreason.ai/v2`, `kind: Recipe`) as zod
 * schemas, both document shapes: the graph `RecipeDefinition` (`topology`)
 * and the workflow manifest (`workflow`). Objects are loose (unknown keys
 * pass), so documents written for other runtimes of this format load
 * unmodified; what Conclave does not use is ignored.
 */
import { z } from "zod";
import { NamedCollections } from "../contracts/knowledge.ts";
import { SkillId } from "../contracts/skill.ts";
import { MAX_SESSION_SKILLS } from "../contracts/skillActivations.ts";
import { ToolPolicy } from "../tools/policy.ts";
import { CONSTRAINT_OPERATORS } from "./recipe.ts";

const Id = z.string().min(1).max(120);
const JsonObject = z.record(z.string(), z.unknown());

/** `x-design`: where an editor drew the recipe. Execution ignores it; the types only document it. */
const DesignMetadata = z.looseObject({
  x: z.number().optional(),
  y: z.number().optional(),
  icon: z.string().optional(),
  color: z.string().optional(),
  label: z.string().optional(),
  zoom: z.number().optional(),
  collapsed: z.boolean().optional(),
});

/** `metadata`: the name, canvas layout (`x-design`, ignored) and generative provenance. */
export const RecipeMetadata = z.looseObject({
  name: z.string().min(1).max(200),
  version: z.string().max(50).optional(),
  description: z.string().max(2_000).optional(),
  "x-design": DesignMetadata.optional(),
  generated_by: z.string().max(200).optional(),
  confidence_score: z.number().min(0).max(1).optional(),
  generation_rationale: z.string().max(4_000).optional(),
  original_user_intent: z.string().max(4_000).optional(),
});

const Interface = z.looseObject({ inputs: JsonObject.optional(), outputs: JsonObject.optional() });

/** A pre-flight constraint (`requirements`). */
export const ConstraintSchema = z.looseObject({
  variable: z.string().min(1).max(200),
  operator: z.enum(CONSTRAINT_OPERATORS),
  value: z.unknown(),
  required: z.boolean().default(true),
  error_message: z.string().max(1_000).optional(),
});

/** Hints for user interfaces that every node may carry; execution ignores them. */
const uiHints = {
  metadata: z.unknown().optional(),
  presentation: z.unknown().optional(),
  interaction: z.unknown().optional(),
  visualization: z.unknown().optional(),
  collaboration: z.unknown().optional(),
};

/**
 * Conclave extension `policy.memory`: whether the run's agents are given the
 * session's memory (retrieved once per run) and whether the run commits what
 * it learned at its successful end. Both default to true; an unknown key is
 * refused (a misspelt switch would otherwise be silently on).
 */
export const RecipeMemoryPolicySchema = z.strictObject(
  {
    retrieve: z.boolean({ error: "must be true or false" }).default(true),
    commit: z.boolean({ error: "must be true or false" }).default(true),
  },
  {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `takes only retrieve and commit (not ${issue.keys.join(", ")})`
        : "must be {retrieve: boolean, commit: boolean} (either may be left out)",
  },
);

/** An agent id, or an abstract reference to be resolved before the recipe runs. */
const AgentRef = z.union(
  [
    z.string().min(1).max(120),
    z.looseObject({
      intent: z.string(),
      constraints: z.array(z.unknown()).optional(),
      candidates: z.array(z.string()).optional(),
    }),
  ],
  { error: "expected an agent id, or an abstract reference {intent, constraints, candidates}" },
);

/**
 * Conclave extension (the recipe format has no skills field): skill ids every agent call of the
 * recipe (top level) or of one agent node or step gives its agent, as skills activated for the
 * session are given (docs/skills.md). A document without it parses as before.
 */
const RecipeSkills = z.array(SkillId).max(MAX_SESSION_SKILLS);

const GraphAgentNode = z.looseObject({
  type: z.literal("agent"),
  id: Id,
  agent_ref: AgentRef,
  system_prompt_override: z.string().max(16_000).optional(),
  inputs_map: z.record(z.string(), z.string()).default({}),
  /** Conclave extension: where the answer goes on the blackboard (default: the node id). */
  output_key: z.string().min(1).optional(),
  /** Conclave: knowledge collections the agent's context is searched in at this node (docs/knowledge.md). */
  knowledge: NamedCollections.optional(),
  /** Conclave: skills this node's agent is given whatever its message routes to (docs/recipes.md, "Skills"). */
  skills: RecipeSkills.optional(),
  ...uiHints,
});
const RouterNodeSchema = z.looseObject({
  type: z.literal("router"),
  id: Id,
  input_key: z.string().min(1),
  routes: z.record(z.string(), Id),
  default_route: Id.optional(),
  ...uiHints,
});
const EvaluatorNodeSchema = z.looseObject({
  type: z.literal("evaluator"),
  id: Id,
  target_variable: z.string().min(1),
  evaluator_agent_ref: z.string().min(1).max(120),
  evaluation_profile: z.union([z.string(), JsonObject]).default("default"),
  pass_threshold: z.number().min(0).max(1),
  max_refinements: z.number().int().min(0).max(100).default(3),
  pass_route: Id,
  fail_route: Id,
  feedback_variable: z.string().min(1).optional(),
  ...uiHints,
});
const HumanNodeSchema = z.looseObject({
  type: z.literal("human"),
  id: Id,
  prompt: z.string().min(1).max(4_000),
  timeout_seconds: z.number().positive().optional(),
  required_role: z.string().min(1).max(64).optional(),
  /** Conclave extensions: where the answer goes, and where the run goes when nobody answers in time. */
  output_key: z.string().min(1).optional(),
  timeout_route: Id.optional(),
  ...uiHints,
});
const GenerativeNode = z.looseObject({
  type: z.literal("generative"),
  id: Id,
  goal: z.string(),
  solver: z
    .looseObject({
      strategy: z.enum(["standard", "tree_search", "ensemble"]).optional(),
      depth_limit: z.number().int().min(0).optional(),
      n_samples: z.number().int().min(0).optional(),
      beam_width: z.number().int().min(0).optional(),
      max_iterations: z.number().int().min(0).optional(),
      aggregation_method: z.string().optional(),
    })
    .optional(),
  allowed_tools: z.array(z.string()).optional(),
  output_schema: JsonObject.optional(),
  ...uiHints,
});

/** A node of a graph recipe (`type` tells which). */
export const GraphNode = z.discriminatedUnion("type", [
  GraphAgentNode,
  RouterNodeSchema,
  EvaluatorNodeSchema,
  HumanNodeSchema,
  GenerativeNode,
]);

const Edge = z.looseObject({ source: Id, target: Id, condition: z.string().max(1_000).optional() });

/** `topology` in full: nodes, edges, the entry point and whether it is still a draft. */
const FullTopology = z.looseObject({
  nodes: z.array(GraphNode),
  edges: z.array(Edge).default([]),
  entry_point: Id.optional(),
  status: z.enum(["draft", "valid"]).default("valid"),
});
/** A topology with nodes and edges, as the document wrote it (defaults filled). */
export type FullTopology = z.infer<typeof FullTopology>;
const NodeList = z.array(GraphNode);
const StepsTopology = z.looseObject({ steps: z.array(GraphNode) });
/** `topology`: nodes and edges, or a plain list of nodes (or `{steps: [...]}`) for a linear chain. */
const Topology = z.union([FullTopology, NodeList, StepsTopology], {
  error: "expected a list of nodes, {nodes: [...], edges: [...]}, or {steps: [...]}",
});

/**
 * The form of `topology` a document uses, picked by its shape: parsing
 * against that one alone names a bad node's own path
 * (`topology.nodes[2].agent_ref`) where the union could only say that the
 * topology as a whole matched none of its forms.
 */
function topologyFormOf(topology: unknown): z.ZodType {
  if (Array.isArray(topology)) return NodeList;
  if (typeof topology === "object" && topology !== null) {
    if ("nodes" in topology) return FullTopology;
    if ("steps" in topology) return StepsTopology;
  }
  return Topology;
}

/** Shape A: the graph `RecipeDefinition`. */
export const GraphRecipeDocument = z.looseObject({
  apiVersion: z.literal("coreason.ai/v2"),
  kind: z.literal("Recipe"),
  metadata: RecipeMetadata,
  status: z.enum(["draft", "published"]).default("draft"),
  interface: Interface.default({}),
  requirements: z.array(ConstraintSchema).default([]),
  /** Conclave: skills every agent the recipe calls is given (docs/recipes.md, "Skills"). */
  skills: RecipeSkills.optional(),
  state: z
    .looseObject({
      properties: JsonObject.optional(),
      persistence: z.enum(["ephemeral", "redis", "postgres"]).default("ephemeral"),
    })
    .optional(),
  policy: z
    .looseObject({
      max_retries: z.number().int().min(0).max(20).default(0),
      timeout_seconds: z.number().positive().optional(),
      execution_mode: z.enum(["sequential", "parallel"]).default("sequential"),
      /** Conclave extension (the workflow shape has it): most node visits in one run. */
      max_steps: z.number().int().min(1).max(10_000).optional(),
      human_in_the_loop: z.boolean().default(false),
      /** Conclave extension: the session's memory for the run's agents, and the run's episode committed. */
      memory: RecipeMemoryPolicySchema.optional(),
    })
    .optional(),
  topology: Topology,
});

const WorkflowAgentStep = z.looseObject({
  type: z.literal("agent"),
  agent: z.string().min(1).max(120),
  next: Id.optional(),
  system_prompt: z.string().max(16_000).optional(),
  inputs: z.record(z.string(), z.string()).optional(),
  output_key: z.string().min(1).optional(),
  /** Conclave: knowledge collections searched for this step (default: its agent definition's `knowledge`). */
  knowledge: NamedCollections.optional(),
  /** Conclave: skills this step's agent is given whatever its message routes to (docs/recipes.md, "Skills"). */
  skills: RecipeSkills.optional(),
});
const WorkflowSwitchStep = z.looseObject({
  type: z.literal("switch"),
  cases: z.record(z.string(), Id),
  default: Id.optional(),
});
const WorkflowCouncilStep = z.looseObject({
  type: z.literal("council"),
  voters: z.array(z.string().min(1)).min(1).max(20),
  strategy: z.enum(["consensus", "majority"]).default("consensus"),
  next: Id.optional(),
  output_key: z.string().min(1).optional(),
});
const WorkflowLogicStep = z.looseObject({
  type: z.literal("logic"),
  code: z.string(),
  next: Id.optional(),
});
/** Conclave extension: the workflow shape's human step, as the graph's human node. */
const WorkflowHumanStep = HumanNodeSchema.omit({ id: true }).extend({ next: Id.optional() });

/** A step of a workflow manifest (`type` tells which). */
export const WorkflowStep = z.discriminatedUnion("type", [
  WorkflowAgentStep,
  WorkflowSwitchStep,
  WorkflowCouncilStep,
  WorkflowLogicStep,
  WorkflowHumanStep,
]);

const Definition = z.discriminatedUnion("type", [
  z.looseObject({
    type: z.literal("tool"),
    id: z.string(),
    /** The Conclave tool's name (served on `conclave.tool.<name>`) when it is one; else `id` is tried. */
    name: z.string(),
    uri: z.string().optional(),
    /** Raises the tool's own risk when stricter (absent: the tool's own applies). */
    risk_level: z.enum(["safe", "standard", "critical"]).optional(),
    description: z.string().optional(),
  }),
  z.looseObject({
    type: z.literal("agent"),
    id: z.string(),
    name: z.string().optional(),
    role: z.string().optional(),
    goal: z.string().optional(),
    backstory: z.string().optional(),
    model: z.string().optional(),
    tools: z.array(z.string()).optional(),
    /** Conclave: agents (ids or agent definitions) this one may delegate to. */
    delegates: z.array(z.string()).optional(),
    /** Knowledge collections the agent's context is searched in, at every step it runs (docs/knowledge.md). */
    knowledge: NamedCollections.optional(),
    /** Conclave: skills the agent is given at every step it runs, with the step's own (docs/recipes.md, "Skills"). */
    skills: RecipeSkills.optional(),
    /** A remote A2A agent: `a2a+https://host/.well-known/agent-card.json` (or see `a2a`). */
    uri: z.string().max(2_000).optional(),
    /** Conclave: a remote A2A agent, by its card's URL. */
    a2a: z.looseObject({ card_url: z.string().min(1).max(2_000) }).optional(),
  }),
]);

/** Shape B: the workflow manifest (`ManifestV2`). */
export const WorkflowRecipeDocument = z.looseObject({
  apiVersion: z.literal("coreason.ai/v2"),
  kind: z.enum(["Recipe", "Agent"]),
  metadata: RecipeMetadata,
  interface: Interface.default({}),
  /** Conclave: skills every agent the recipe calls is given (docs/recipes.md, "Skills"). */
  skills: RecipeSkills.optional(),
  state: z.looseObject({ data_schema: JsonObject.optional(), backend: z.string().optional() }).optional(),
  policy: z
    .looseObject({
      max_steps: z.number().int().min(1).max(10_000).optional(),
      max_retries: z.number().int().min(0).max(20).default(3),
      timeout: z.number().positive().optional(),
      human_in_the_loop: z.boolean().default(false),
      execution_mode: z.enum(["sequential", "parallel"]).default("sequential"),
      /** Conclave: how the run's tool calls are governed (see ToolPolicy). */
      tools: ToolPolicy.optional(),
      /** Conclave: the session's memory for the run's agents, and the run's episode committed. */
      memory: RecipeMemoryPolicySchema.optional(),
    })
    .optional(),
  definitions: z.record(z.string(), Definition).default({}),
  workflow: z.looseObject({ start: Id.optional(), steps: z.record(z.string(), WorkflowStep) }),
});

/** A graph recipe document as parsed (defaults filled). */
export type GraphRecipeDocument = z.infer<typeof GraphRecipeDocument>;
/** A workflow manifest as parsed (defaults filled). */
export type WorkflowRecipeDocument = z.infer<typeof WorkflowRecipeDocument>;

/**
 * Parses a graph recipe document, checking its topology against the one
 * form it is written in (see topologyFormOf), so every issue names its own path.
 */
export function parseGraphDocument(document: unknown): ReturnType<typeof GraphRecipeDocument.safeParse> {
  const topology = (document as { topology?: unknown } | null)?.topology;
  const form = topologyFormOf(topology);
  if (form === Topology) return GraphRecipeDocument.safeParse(document);
  const checked = GraphRecipeDocument.extend({ topology: form }).safeParse(document);
  return checked as ReturnType<typeof GraphRecipeDocument.safeParse>;
}

/** The JSON Schemas of both document shapes (for editors and `conclave schemas`). */
export function recipeJsonSchemas(): { graph: Record<string, unknown>; workflow: Record<string, unknown> } {
  return {
    graph: z.toJSONSchema(GraphRecipeDocument, { io: "input", unrepresentable: "any" }) as Record<string, unknown>,
    workflow: z.toJSONSchema(WorkflowRecipeDocument, { io: "input", unrepresentable: "any" }) as Record<
      string,
      unknown
    >,
  };
}
