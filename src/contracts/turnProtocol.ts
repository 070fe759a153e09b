/**
 * The protocol between the turn statechart (machines/turn/) and the process
 * hosting it: what the machine asks its invoked actors, what they send back,
 * what it asks the host to record, and what a finished turn returns. The
 * machine and its hosts (src/runtime) both import these from here, so neither
 * depends on the other's module for the shapes they exchange.
 */
import type { Workspace } from "../cognition/workspace.ts";
import type { AgentContext, AgentReply } from "./agent.ts";
import type { ArenaPolicy, ContextArenaState } from "./context.ts";
import type { ReplyFallback, StreamId } from "./council.ts";
import type { ErrorCode } from "./errors.ts";
import type { EventBody, EventPayload } from "./events.ts";
import type { RecipeRunOutput } from "./recipeProtocol.ts";
import type { ToolApproval } from "./recipeRun.ts";
import type { TurnOutcome } from "./turn.ts";
import { addUsage, noUsage, type TurnUsage, type Usage } from "./usage.ts";
import type { Modulators, Sensors, Stance } from "./workspace.ts";

/** The limits a turn runs within. */
export interface TurnPolicy {
  /** Deadline of each stage. */
  stage_timeout_ms: number;
  /** Budget of one attempt of an agent request inside a wave. */
  agent_timeout_ms: number;
  /**
   * Attempts per agent request: a request lost with its worker (no answer in
   * time) is sent again, and goes to another worker of the same agent.
   */
  agent_attempts: number;
  max_deliberation_rounds: number;
  /** Re-renderings the evaluator loop may ask of the voice after critic feedback. */
  max_voice_retries: number;
  /** Tokens the turn's agents may use in all (the scheduler plans within it). */
  token_budget: number;
  /** The context arena: the session's context budget and the model counting it (docs/context.md). Default: DEFAULT_ARENA_POLICY. */
  context?: ArenaPolicy;
}

/** What a finished turn returns to the session that ran it. */
export interface TurnOutput {
  session_id: string;
  turn_id: number;
  response: string;
  outcome: TurnOutcome;
  modulators: Modulators;
  stance: Stance;
  /** The session's context arena after the turn (absent: a recipe turn, which does not plan one). */
  context_arena?: ContextArenaState;
  /**
   * The turn waits for a person's approval of an agent's tool call: it is not finished, and runs
   * again from its log once answered (`outcome` is then meaningless). The host adds `seq`.
   */
  suspended?: TurnSuspension;
}

/** Where a suspended turn or run waits: its node (a recipe's, or `agent:<id>` in the pipeline) and what for. */
export type TurnSuspension = NonNullable<RecipeRunOutput["suspended"]>;

/** What a turn asks its host to append to the event log (the host adds the clock-derived fields). */
export type TurnRecord =
  | Exclude<EventBody, { kind: "TURN_COMPLETED" }>
  | {
      kind: "TURN_COMPLETED";
      payload: Omit<EventPayload<"TURN_COMPLETED">, "total_time_ms">;
    };

/** The input of the `runWave` actor: one wave of agent requests. */
export interface RunWaveInput {
  session_id: string;
  turn_id: number;
  wave: number;
  agents: string[];
  timeout_ms: number;
  attempts: number;
  context: AgentContext;
  /** The skills activated for the session: each agent request carries them (absent: none). */
  active_skills?: string[];
}

/** Events a wave sends back as its agents answer, then `wave.done` once all have answered or failed. */
export type WaveEvent =
  | { type: "agent.replied"; reply: AgentReply }
  | { type: "agent.failed"; agent_id: string; code: ErrorCode; message: string }
  /** An agent's named stream (stream id `<agent_id>:<name>`), opened, written and closed before its reply. */
  | { type: "agent.stream.start"; stream_id: StreamId; content_type: string }
  | { type: "agent.stream.chunk"; stream_id: StreamId; delta: string }
  | { type: "agent.stream.end"; stream_id: StreamId }
  | {
      type: "agent.stream.intercepted";
      stream_id: StreamId;
      interceptor: string;
      action: "redact" | "block";
      reason: string;
    }
  /** One of the agent's tool calls waits for a person's approval: the turn suspends (durably) until it is answered. */
  | {
      type: "agent.approval_required";
      agent_id: string;
      approval: ToolApproval;
      prompt: string;
      required_role: string;
    }
  | { type: "wave.done" };

/** What the voice sends back while it renders (multiplexed streams), then `voice.done`. */
export type VoiceEvent =
  | { type: "voice.start"; stream_id: StreamId; content_type: string }
  | { type: "voice.chunk"; stream_id: StreamId; delta: string }
  | { type: "voice.end"; stream_id: StreamId }
  | { type: "voice.done"; text: string; usage?: Usage; fallback?: ReplyFallback }
  | { type: "voice.failed"; code: string; message: string }
  | { type: "voice.intercepted"; stream_id: StreamId; interceptor: string; action: "redact" | "block"; reason: string };

/** Double-texting with `interrupt`: a newer turn stops this one, which completes with a warning. */
export type InterruptEvent = { type: "turn.interrupt"; by_turn_id: number };

/** A client cancelled the turn: it stops where it is and completes with outcome Cancelled. */
export type CancelEvent = { type: "turn.cancel"; reason: string };

/** Every event a turn accepts from outside its own actors' completions. */
export type TurnEvent = WaveEvent | VoiceEvent | InterruptEvent | CancelEvent;

/** The input of the `deliberate` actor: one round of deliberation. */
export interface DeliberateInput {
  round: number;
  workspace: Workspace;
  /** For asking agents to revise: who, and how long they have. */
  session_id: string;
  turn_id: number;
  timeout_ms: number;
  context: AgentContext;
  /** The skills activated for the session: each revise request carries them (absent: none). */
  active_skills?: string[];
}

/** How one agent revised its claims in a deliberation round. */
export interface Revision {
  agent_id: string;
  withdrew: string[];
  conceded: string[];
  opposed: string[];
}

/** The output of the `deliberate` actor. */
export interface DeliberateOutput {
  workspace: Workspace;
  consensus: number;
  revisions: Revision[];
  usage: Record<string, Usage>;
}

/** The input of the `screen` actor: the request interceptors' view of the message. */
export interface ScreenInput {
  session_id: string;
  turn_id: number;
  text: string;
  sensors: Sensors;
}

/** The output of the `screen` actor: the message as the interceptors left it, and what they did. */
export interface ScreenOutput {
  text: string;
  interceptions: { interceptor: string; action: "redact" | "block"; reason: string }[];
  blocked: boolean;
}

/** The turn's cost summary for TURN_COMPLETED: totals, and the usage of each actor. */
export const usageSummary = (byActor: Record<string, Usage>): TurnUsage => {
  const { prompt_tokens, completion_tokens } = Object.values(byActor).reduce(addUsage, noUsage());
  return { prompt_tokens, completion_tokens, by_actor: byActor };
};
