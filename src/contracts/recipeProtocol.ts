/**
 * The protocol between a compiled recipe machine (machines/recipe/) and the
 * process hosting it: what the machine asks its invoked actors, what they
 * send back, and what a finished or suspended run returns.
 */
import type { StreamId } from "./council.ts";
import type { HumanAnswer, JsonObject, RecipeCheckpoint, ToolApproval } from "./recipeRun.ts";
import type { TurnOutcome } from "./turn.ts";
import type { Usage } from "./usage.ts";

/** What a recipe machine is started with. */
export interface RecipeRunInput {
  session_id: string;
  turn_id: number;
  /** The run's arguments (already checked against `interface.inputs`). */
  inputs: JsonObject;
  /** Go on from a node (a takeover, or a suspension answered) rather than from the start. */
  resume?: { at: string; checkpoint: RecipeCheckpoint; answer?: HumanAnswer };
  /** What is left of the global deadline, in ms; absent: no global deadline. */
  deadline_in_ms?: number;
  /** Cancelled before it started: it ends at once, Cancelled. */
  cancelled?: string;
}

/** The input of the `callAgent` actor: one agent (or judge) call of a node. */
export interface RecipeAgentCall {
  session_id: string;
  turn_id: number;
  node: string;
  agent: string;
  /** The agent's named inputs (from `inputs_map`, or the whole blackboard). */
  inputs: JsonObject;
  /** The text the agent is given as the user's message: its inputs, then any feedback. */
  prompt: string;
  system_prompt?: string;
  /** An evaluator's critique of the previous attempt, appended to the prompt. */
  feedback?: string;
  attempt: number;
  /** The node visit this call belongs to (the run's step count, the same when a takeover runs the node again). */
  step?: number;
}

/** What `callAgent` sends back: stream parts of the node's agent, then its answer or failure. */
export type RecipeAgentEvent =
  | { type: "node.stream.start"; node: string; stream_id: StreamId; content_type: string }
  | { type: "node.stream.chunk"; node: string; stream_id: StreamId; delta: string }
  | { type: "node.stream.end"; node: string; stream_id: StreamId }
  /** A tool call of the node's agent needs a person's approval: the run suspends at the node. */
  | { type: "node.approval_required"; node: string; approval: ToolApproval; prompt: string; required_role?: string }
  | {
      type: "node.stream.intercepted";
      node: string;
      stream_id: StreamId;
      interceptor: string;
      action: "redact" | "block";
      reason: string;
    }
  | {
      type: "node.answered";
      node: string;
      output: unknown;
      agent: string;
      worker: string;
      elapsed_ms: number;
      usage?: Usage;
      /** The skills its agent was given (the reply's `skills`: a worker with skills only). */
      skills?: string[];
    }
  | { type: "node.failed"; node: string; code: string; message: string };

/** The input of the `runLogic` actor: an operator-registered handler for a workflow `logic` step. */
export interface RecipeLogicCall {
  session_id: string;
  turn_id: number;
  node: string;
  handler: string;
  blackboard: JsonObject;
}

/** The input of the `runCouncil` actor: every voter answers; votes are tallied by `strategy`. */
export interface RecipeCouncilCall {
  session_id: string;
  turn_id: number;
  node: string;
  voters: string[];
  strategy: "consensus" | "majority";
  prompt: string;
  inputs: JsonObject;
}

/** What `runCouncil` returns. */
export interface RecipeCouncilResult {
  /** The decision, or null when the strategy found none (no consensus, a tie). */
  decision: string | null;
  votes: Record<string, string>;
  failed: string[];
}

/** The input of the `persist` actor: the blackboard is saved to the recipe's store (and checked). */
export interface RecipePersistCall {
  session_id: string;
  turn_id: number;
  blackboard: JsonObject;
  /** Check the blackboard against `interface.outputs` (the run's end), not only save it. */
  checkOutputs: boolean;
}

/** What a run returns to the session that hosts it. */
export interface RecipeRunOutput {
  session_id: string;
  turn_id: number;
  blackboard: JsonObject;
  /** How it ended; absent when it is suspended. */
  outcome?: TurnOutcome;
  /** Suspended at a human node: no process holds it until it is resumed. */
  suspended?: {
    node: string;
    prompt: string;
    required_role?: string;
    /** The tool call waiting for approval, when that is what the run waits for. */
    approval?: ToolApproval;
    /** Added by the host: when the node times out, and the seq of the TURN_SUSPENDED event. */
    expires_at?: number;
    seq?: number;
  };
  response: string;
}
