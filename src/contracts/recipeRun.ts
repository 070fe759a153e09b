/**
 * The wire shapes of recipe runs: what a client submits to run a recipe,
 * what the WAL carries, the events a run writes, and how a suspended run is
 * resumed. A recipe run is a turn: the same WAL, event log, status and
 * takeover as the built-in pipeline's turns.
 */
import { z } from "zod";
import { SessionId, TurnId } from "./ids.ts";

/** A JSON object: a recipe document, its inputs, the blackboard. */
export const JsonObject = z.record(z.string(), z.unknown());
export type JsonObject = z.infer<typeof JsonObject>;

/** Part of a submission (and of its WAL entry): run this recipe document with these inputs. */
export const RecipeSubmission = z.object({
  /** The recipe document (graph or workflow shape), as JSON. Loaded and checked again by the runner. */
  document: JsonObject,
  /** The run's arguments, checked against the recipe's `interface.inputs`; they seed the blackboard. */
  inputs: JsonObject.default({}),
  /** Every write tool runs as a dry run (its `dryRun`, or simulated): the run shows its plan and changes nothing. */
  dry_run: z.boolean().optional(),
});
export type RecipeSubmission = z.infer<typeof RecipeSubmission>;

/** A tool call waiting for a person's approval: the run is suspended at its node until it is answered. */
export const ToolApproval = z.object({
  call_id: z.string(),
  tool: z.string(),
  /** The call's arguments, as the request interceptors left them. */
  args: z.unknown(),
  /** Why it needs approval (the policy's rule). */
  reason: z.string(),
});
export type ToolApproval = z.infer<typeof ToolApproval>;

/** What a person answered to a human node (or that nobody did in time). */
export const HumanAnswer = z.object({
  node: z.string().min(1).max(120),
  answer: z.unknown(),
  user_id: z.string().min(1).max(128).optional(),
  role: z.string().min(1).max(64).optional(),
  /** Nobody answered before the node's `timeout_seconds`. */
  timed_out: z.boolean().default(false),
});
export type HumanAnswer = z.infer<typeof HumanAnswer>;

/** Requested on `conclave.turn.resume.<session_id>`: answer a suspended run's human node. */
export const ResumeRequest = z.object({
  turn_id: TurnId,
  /** The answer: any JSON value (`{"approved": true}`, a string…). It is written to the node's output key. */
  input: z.unknown(),
  user_id: z.string().min(1).max(128),
  /** The role the user answers in; must equal the node's `required_role` when it has one. */
  role: z.string().min(1).max(64).optional(),
});
export type ResumeRequest = z.infer<typeof ResumeRequest>;

/** The reply to a resume request: the run goes on from the human node. */
export const ResumeReply = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  node: z.string(),
  /** `conclave.events.<i>.<session_id>.<turn_id>`: where the rest of the run appears. */
  events_subject: z.string(),
  /** The seq of the TURN_SUSPENDED this answers: the run goes on after it. */
  after_seq: z.number().int().min(0),
});
export type ResumeReply = z.infer<typeof ResumeReply>;

/** Why a recipe exists, when a model wrote it (generative provenance, from its metadata). */
export const RecipeProvenance = z.object({
  generated_by: z.string().optional(),
  confidence_score: z.number().optional(),
  generation_rationale: z.string().optional(),
  original_user_intent: z.string().optional(),
});

/** Where a run stands when it may go on from a node: its blackboard and counters at that point. */
export const RecipeCheckpoint = z.object({
  blackboard: JsonObject,
  /** Node visits so far (bounded by policy.max_steps). */
  steps: z.number().int().min(0),
  /** Per evaluator node, how many refinements it has asked for. */
  refinements: z.record(z.string(), z.number().int().min(0)),
  /** What is left of the run's global deadline (`policy.timeout_seconds`), when it has one. */
  remaining_ms: z.number().min(0).optional(),
});
export type RecipeCheckpoint = z.infer<typeof RecipeCheckpoint>;

const Node = z.string().min(1).max(120);

/** The events of a recipe run (besides TURN_STARTED, streams, warnings and TURN_COMPLETED). */
export const RecipeEventPayloads = {
  /** The run begins: the document (for drawing its machine), its inputs and its provenance. */
  RECIPE_STARTED: z.object({
    recipe: z.string(),
    version: z.string().optional(),
    shape: z.enum(["graph", "workflow"]),
    document: JsonObject,
    inputs: JsonObject,
    execution_mode: z.enum(["sequential", "parallel"]),
    timeout_seconds: z.number().optional(),
    /** Epoch ms by which the run must end (policy.timeout_seconds), added by the runner's clock. */
    deadline_at: z.number().optional(),
    provenance: RecipeProvenance,
    /** A dry run: write tools only simulate. */
    dry_run: z.boolean().optional(),
  }),
  /** The pre-flight constraints, checked before any node runs. */
  PREFLIGHT_CHECKED: z.object({
    passed: z.boolean(),
    failures: z.array(z.object({ variable: z.string(), operator: z.string(), message: z.string() })),
    warnings: z.array(z.object({ variable: z.string(), operator: z.string(), message: z.string() })),
  }),
  /** A node starts; `checkpoint` when the run can go on from here after a crash or a suspension. */
  NODE_STARTED: z.object({
    node: Node,
    kind: z.string(),
    step: z.number().int().min(1),
    attempt: z.number().int().min(1),
    checkpoint: RecipeCheckpoint.optional(),
  }),
  NODE_COMPLETED: z.object({
    node: Node,
    kind: z.string(),
    /** Where on the blackboard its result went, and the result. */
    output_key: z.string().optional(),
    output: z.unknown(),
    elapsed_ms: z.number().min(0),
    agent: z.string().optional(),
    worker: z.string().optional(),
    /**
     * The skills the node's agent was given (routed by its message, activated for the session, declared by
     * the recipe), as AGENT_COMPLETED's `skills`: `[]` when none; absent for an agent on a worker without skills.
     */
    skills: z.array(z.string().max(64)).max(1_000).optional(),
  }),
  NODE_FAILED: z.object({
    node: Node,
    kind: z.string(),
    code: z.string(),
    message: z.string(),
    attempt: z.number().int().min(1),
    /** Another attempt follows (policy.max_retries). */
    retrying: z.boolean(),
  }),
  /** A decision of the graph: an edge, a router's route, a switch case, an evaluator's verdict. */
  ROUTE_TAKEN: z.object({ from: Node, to: z.string(), reason: z.string() }),
  EVALUATION_SCORED: z.object({
    node: Node,
    score: z.number().min(0).max(1),
    passed: z.boolean(),
    refinement: z.number().int().min(0),
    critique: z.string(),
  }),
  /** A human node waits for an answer. */
  HUMAN_INPUT_REQUESTED: z.object({
    node: Node,
    prompt: z.string(),
    required_role: z.string().optional(),
    /** A tool call the agent of this node made waits for approval (answer `{ approved, reason? }`). */
    approval: ToolApproval.optional(),
    /** Epoch ms after which the node times out. */
    expires_at: z.number().optional(),
  }),
  /** The run is suspended, durably: no process holds it until it is resumed. */
  TURN_SUSPENDED: z.object({
    node: Node,
    expires_at: z.number().optional(),
    /** What was left of the run's global deadline (time spent waiting for a person does not count). */
    remaining_ms: z.number().min(0).optional(),
  }),
  HUMAN_INPUT_RECEIVED: HumanAnswer,
} as const;
