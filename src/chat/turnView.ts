/**
 * What the chat shows of one turn while it runs, folded from its events: the
 * stage, the agents of each wave, the deliberation rounds, the council's
 * decision, the voice's streamed thinking and reply, the critics' verdicts,
 * the warnings and how it ended. Pure: the same events give the same view.
 */
import type { CriticResult } from "../contracts/critic.ts";
import type { EngineEvent } from "../contracts/events.ts";
import type { Stage, TurnOutcome, TurnWarning } from "../contracts/turn.ts";

/** One agent asked in a wave: running until it answers or fails. */
export interface AgentMark {
  id: string;
  wave: number;
  status: "running" | "done" | "failed";
  /** Why it failed (code: message). */
  note?: string;
}

/** One deliberation round: its consensus once measured, done once it closed. */
export interface RoundView {
  round: number;
  /** The consensus level, 0..1, once CONSENSUS_UPDATED or DELIB_ROUND_COMPLETED gave it. */
  consensus: number | null;
  /** How many claims were weighed. */
  claims: number | null;
  /** Agents that withdrew or conceded a claim in this round. */
  revised: number;
  done: boolean;
}

/** The critics' verdict on one rendering of the reply. */
export interface CriticsView {
  attempt: number;
  passed: boolean;
  results: CriticResult[];
}

/** Everything the chat shows about one turn. */
export interface TurnView {
  /** The turn's number in its session, once the runner acknowledged it. */
  turnId: number | null;
  /** What the user said. */
  text: string;
  /** The stage running now (the last one entered). */
  stage: Stage | null;
  /** The stages entered so far, in order. */
  stages: Stage[];
  agents: AgentMark[];
  rounds: RoundView[];
  council: { speak: boolean; intent: string; urgency: string } | null;
  /** The voice's thinking stream, as streamed so far (of the latest rendering). */
  thinking: string;
  /** The voice's reply, as streamed so far (of the latest rendering), then as rendered. */
  reply: string;
  critics: CriticsView[];
  warnings: TurnWarning[];
  /** A safety interrupt or a refused request: shown beside the warnings. */
  alerts: string[];
  /** Set by TURN_COMPLETED. */
  outcome: TurnOutcome | null;
  /** Why the chat stopped following the turn before its TURN_COMPLETED (`cancelled`, or a failure). */
  stopped: string | null;
  /** The final reply (TURN_COMPLETED's response). */
  response: string | null;
  totalMs: number | null;
  /** 1, or the attempt a runner that took the turn over is running (TURN_RESUMED). */
  attempt: number;
}

/** A turn the user just submitted, before any event. */
export function newTurnView(text: string): TurnView {
  return {
    turnId: null,
    text,
    stage: null,
    stages: [],
    agents: [],
    rounds: [],
    council: null,
    thinking: "",
    reply: "",
    critics: [],
    warnings: [],
    alerts: [],
    outcome: null,
    stopped: null,
    response: null,
    totalMs: null,
    attempt: 1,
  };
}

const markAgent = (agents: AgentMark[], id: string, wave: number, mark: Omit<AgentMark, "id" | "wave">) => {
  const found = agents.some((agent) => agent.id === id && agent.wave === wave);
  return found
    ? agents.map((agent) => (agent.id === id && agent.wave === wave ? { ...agent, ...mark } : agent))
    : [...agents, { id, wave, ...mark }];
};

const updateRound = (rounds: RoundView[], round: number, patch: Partial<RoundView>): RoundView[] => {
  const found = rounds.some((r) => r.round === round);
  const base: RoundView = { round, consensus: null, claims: null, revised: 0, done: false };
  return found ? rounds.map((r) => (r.round === round ? { ...r, ...patch } : r)) : [...rounds, { ...base, ...patch }];
};

/** The view after one more of the turn's events. Events the chat does not show leave it as it was. */
export function applyTurnEvent(view: TurnView, event: EngineEvent): TurnView {
  switch (event.kind) {
    case "TURN_STARTED":
      return { ...view, turnId: event.turn_id, text: event.payload.user_input };
    case "TURN_RESUMED":
      // `last_step`: the turn goes on after its recorded steps, which stand. Else it runs again from ingest.
      if (event.payload.from === "last_step") return { ...view, attempt: event.payload.attempt };
      return { ...newTurnView(view.text), turnId: view.turnId, attempt: event.payload.attempt };
    case "TURN_STAGE_CHANGED":
      return { ...view, stage: event.payload.stage, stages: [...view.stages, event.payload.stage] };
    case "SAFETY_INTERRUPT":
      return {
        ...view,
        alerts: [...view.alerts, `safety interrupt: ${event.payload.sensor} ${event.payload.value.toFixed(2)}`],
      };
    case "REQUEST_INTERCEPTED":
      return event.payload.action === "block"
        ? { ...view, alerts: [...view.alerts, `refused by ${event.payload.interceptor}: ${event.payload.reason}`] }
        : view;
    case "WAVE_STARTED":
      return {
        ...view,
        agents: event.payload.agents.reduce(
          (agents, id) => markAgent(agents, id, event.payload.wave, { status: "running" }),
          view.agents,
        ),
      };
    case "AGENT_COMPLETED":
      return {
        ...view,
        agents: markAgent(view.agents, event.payload.agent_id, event.payload.wave, { status: "done" }),
      };
    case "AGENT_FAILED":
      return {
        ...view,
        agents: markAgent(view.agents, event.payload.agent_id, event.payload.wave, {
          status: "failed",
          note: `${event.payload.code}: ${event.payload.message}`,
        }),
      };
    case "DELIB_ROUND_STARTED":
      return { ...view, rounds: updateRound(view.rounds, event.payload.round, {}) };
    case "CONSENSUS_UPDATED":
      return {
        ...view,
        rounds: updateRound(view.rounds, event.payload.round, {
          consensus: event.payload.level,
          claims: event.payload.claims.length,
        }),
      };
    case "DELIB_ROUND_COMPLETED":
      return {
        ...view,
        rounds: updateRound(view.rounds, event.payload.round, {
          consensus: event.payload.consensus,
          revised: event.payload.revisions.filter((r) => r.withdrew.length + r.conceded.length > 0).length,
          done: true,
        }),
      };
    case "COUNCIL_DECISION_MADE":
      return {
        ...view,
        council: { speak: event.payload.speak, intent: event.payload.intent, urgency: event.payload.urgency },
      };
    case "STREAM_START":
      // A new rendering (the critics sent the voice back) starts its streams afresh.
      if (event.payload.stream_id === "thinking") return { ...view, thinking: "" };
      if (event.payload.stream_id === "default") return { ...view, reply: "" };
      return view;
    case "STREAM_CHUNK":
      if (event.payload.stream_id === "thinking") return { ...view, thinking: view.thinking + event.payload.delta };
      if (event.payload.stream_id === "default") return { ...view, reply: view.reply + event.payload.delta };
      return view; // an agent's own stream: not part of the conversation
    case "VOICE_RENDERED":
      return { ...view, reply: event.payload.text };
    case "CRITICS_UPDATED":
      return {
        ...view,
        critics: [
          ...view.critics,
          { attempt: event.payload.attempt, passed: event.payload.passed, results: event.payload.results },
        ],
      };
    case "STAGE_WARNING":
      return { ...view, warnings: [...view.warnings, event.payload] };
    case "TURN_COMPLETED":
      return {
        ...view,
        outcome: event.payload.outcome,
        response: event.payload.response,
        totalMs: event.payload.total_time_ms,
      };
    default:
      return view;
  }
}

/** True once the turn completed, or the chat stopped following it. */
export const isSettled = (view: TurnView): boolean => view.outcome !== null || view.stopped !== null;

/** True when the turn ran to its end (Complete or PartialSuccess). */
export const ranToEnd = (view: TurnView): boolean =>
  view.outcome?.status === "Complete" || view.outcome?.status === "PartialSuccess";

/** One line saying how a turn ended, e.g. `✔ Complete in 84 ms`, `✘ cancelled: user`. */
export function outcomeLine(view: TurnView): string | null {
  const outcome = view.outcome;
  if (!outcome) return view.stopped === null ? null : `✘ ${view.stopped}`;
  const took = view.totalMs === null ? "" : ` in ${Math.round(view.totalMs)} ms`;
  switch (outcome.status) {
    case "Complete":
      return `✔ Complete${took}`;
    case "PartialSuccess":
      return `◐ PartialSuccess${took} (${outcome.warnings.length} warning(s))`;
    case "Failed":
      return `✘ Failed: ${outcome.error.code}: ${outcome.error.message}`;
    case "Cancelled":
      return `✘ cancelled: ${outcome.reason}`;
  }
}
