/**
 * A recipe as Conclave runs it: the one shape both recipe document shapes
 * (the graph `RecipeDefinition` and the `workflow`/`steps` manifest) are
 * loaded into (`loadRecipe`), and what `compileRecipe` turns into a
 * statechart. Plain JSON all through: a recipe travels in the turn WAL and
 * in the event log, so a runner taking a turn over rebuilds the same machine.
 */
import type { ToolPolicy } from "../tools/policy.ts";
import type { Expr } from "./expression.ts";

/** The operators of a pre-flight constraint (RECIPES.md, `requirements`). */
export const CONSTRAINT_OPERATORS = ["eq", "neq", "gt", "gte", "lt", "lte", "in", "contains"] as const;
/** One of CONSTRAINT_OPERATORS. */
export type ConstraintOperator = (typeof CONSTRAINT_OPERATORS)[number];

/** A pre-flight check on the inputs and blackboard, evaluated before any node runs. */
export interface Constraint {
  /** Dotted path into the blackboard (which the inputs seed), e.g. `data.row_count`. */
  variable: string;
  operator: ConstraintOperator;
  value: unknown;
  /** True (default): a failure ends the turn before any agent is called. False: a warning. */
  required: boolean;
  error_message?: string;
}

/** Where a recipe's blackboard is kept between turns and across restarts. */
export type Persistence = "nats" | "redis" | "postgres";

/** How a run is bounded (`policy`), with every default filled in. */
export interface RecipePolicy {
  /** Extra attempts of a failed step (an agent that errs or times out). */
  max_retries: number;
  /** Deadline of the whole run, across all nodes and processes. Absent: none beyond each node's. */
  timeout_seconds?: number;
  /** `parallel`: the branches of a fork run at once; `sequential`: one after another. */
  execution_mode: "sequential" | "parallel";
  /** Most node visits in one run: bounds cycles. */
  max_steps: number;
  /** Every agent node's result waits for a person's approval (a human step after it). */
  human_in_the_loop: boolean;
  /** How the run's tool calls are governed (a Conclave field, `policy.tools`); the runner's policy applies too, the stricter wins. */
  tools?: ToolPolicy;
  /**
   * The session's memory in the run (a Conclave field, `policy.memory`): `retrieve` gives every agent call
   * the memory retrieved once at the run's start, `commit` stores the run's episode at its successful end.
   * Absent: both on.
   */
  memory?: { retrieve: boolean; commit: boolean };
}

/** Why the recipe exists, when a model wrote it (generative provenance). */
export interface Provenance {
  generated_by?: string;
  confidence_score?: number;
  generation_rationale?: string;
  original_user_intent?: string;
}

/** An outgoing transition of a node: taken when `when` holds over the blackboard (always, without one). */
export interface Transition {
  target: string;
  /** The condition as written, for drawings and errors. */
  label?: string;
  when?: Expr;
}

interface NodeBase {
  id: string;
  /** Where the node was in the document (`topology.nodes[2]`, `workflow.steps.review`), for errors. */
  at: string;
  /** Taken in order; the first whose condition holds wins, except that several unconditioned ones fork. */
  next: Transition[];
}

/** Asks an agent (built-in or user-defined, over NATS) and writes its answer to the blackboard. */
export interface AgentNode extends NodeBase {
  kind: "agent";
  /** The Conclave agent id (`acme.writer`). */
  agent: string;
  system_prompt?: string;
  /** Agent input name → dotted blackboard path. */
  inputs_map: Record<string, string>;
  /** Where the answer is written on the blackboard. Default: the node id. */
  output_key: string;
  /** Tools the agent may call here (Conclave tool names, from its definition's `tools`). */
  tools?: string[];
  /** Agents it may delegate to (`ctx.delegate`; a Conclave field of its definition, `delegates`). */
  delegates?: string[];
  /** Knowledge collections its agent's context is searched in (`knowledge:`; docs/knowledge.md). */
  knowledge?: string[];
  /** Skills its agent is given besides the recipe's (`skills:`, Conclave's extension; docs/recipes.md). */
  skills?: string[];
}

/** Picks the next node by the value at `input_key`, strictly matched against `routes`. */
export interface RouterNode extends NodeBase {
  kind: "router";
  input_key: string;
  routes: Record<string, string>;
  default_route?: string;
}

/** LLM-as-a-judge: scores `target_variable`, routes on `pass_threshold`, feeds the critique back. */
export interface EvaluatorNode extends NodeBase {
  kind: "evaluator";
  target_variable: string;
  /** The judge agent's id. */
  judge: string;
  /** Criteria, inline, or a preset's name. */
  profile: string | Record<string, unknown>;
  pass_threshold: number;
  max_refinements: number;
  pass_route: string;
  fail_route: string;
  feedback_variable: string;
}

/** The run suspends, durably, until a person (with `required_role`, if set) answers. */
export interface HumanNode extends NodeBase {
  kind: "human";
  prompt: string;
  timeout_seconds?: number;
  required_role?: string;
  /** Where the answer is written. Default: the node id. */
  output_key: string;
  /** Where the run goes when nobody answers in time. Default: it ends with outcome Failed (human_timeout). */
  timeout_route?: string;
  /**
   * An approval (policy.human_in_the_loop puts one after each agent node): an answer of `false`,
   * `"no"`, `"reject"` or `{approved: false}` ends the run Failed (`rejected`).
   */
  approval?: boolean;
}

/** Workflow `switch` step: the first case whose condition holds, else `default`. */
export interface SwitchNode extends NodeBase {
  kind: "switch";
  default?: string;
}

/** Workflow `council` step: every voter answers; the votes are tallied by `strategy`. */
export interface CouncilNode extends NodeBase {
  kind: "council";
  voters: string[];
  strategy: "consensus" | "majority";
  output_key: string;
}

/** Workflow `logic` step: runs the operator's handler registered under `handler`; the document's code never runs. */
export interface LogicNode extends NodeBase {
  kind: "logic";
  handler: string;
  output_key: string;
}

/** A node of a recipe, by `kind`. */
export type RecipeNode = AgentNode | RouterNode | EvaluatorNode | HumanNode | SwitchNode | CouncilNode | LogicNode;
/** `agent`, `router`, `evaluator`, `human`, `switch`, `council` or `logic`. */
export type NodeKind = RecipeNode["kind"];

/** A recipe, loaded and checked: what the compiler takes and the WAL carries. */
export interface Recipe {
  name: string;
  version?: string;
  /** Which document shape it came from. */
  shape: "graph" | "workflow";
  status: "draft" | "published";
  description?: string;
  provenance: Provenance;
  /** JSON Schemas of the run's arguments and result. */
  inputs_schema?: Record<string, unknown>;
  outputs_schema?: Record<string, unknown>;
  /** JSON Schema properties of the blackboard's shared variables: every write of one is checked (stateSchema.ts). */
  state_properties?: Record<string, unknown>;
  persistence: Persistence;
  constraints: Constraint[];
  policy: RecipePolicy;
  /** The risk the document's tool definitions declare, by tool name (a workflow's `definitions`). */
  tool_risks?: Record<string, "safe" | "standard" | "critical">;
  /** Remote A2A agents the document defines, by agent id (a workflow's `definitions`): delegating to one asks it over A2A. */
  remote_agents?: Record<string, { card_url: string }>;
  /**
   * Skills every agent call of the run gives its agent (`skills:` at the top level, Conclave's
   * extension), as AgentRequest `active_skills`; an agent node adds its own.
   */
  skills?: string[];
  entry: string;
  /** In document order. */
  nodes: RecipeNode[];
}

/** Defaults of a policy field the document leaves out. */
export const DEFAULT_POLICY: RecipePolicy = {
  max_retries: 0,
  execution_mode: "sequential",
  max_steps: 50,
  human_in_the_loop: false,
};
