import { MAX_DELIBERATION_ROUNDS } from "../../src/cognition/deliberation.ts";
import type { Workspace } from "../../src/cognition/workspace.ts";
import type { AgentContext } from "../../src/contracts/agent.ts";
import { type ContextArenaState, emptyArenaState, type ModelSummary } from "../../src/contracts/context.ts";
import type { CouncilDecision, StreamId, VoiceRequest } from "../../src/contracts/council.ts";
import type { CriticResult } from "../../src/contracts/critic.ts";
import type { EventPayload } from "../../src/contracts/events.ts";
import type { LedgerDigest, RecordedCompactionRequest } from "../../src/contracts/ledger.ts";
import type { AgentsPipeline } from "../../src/contracts/pipeline.ts";
import type { RecordedSupplement } from "../../src/contracts/supplement.ts";
import type { Stage, TurnWarning } from "../../src/contracts/turn.ts";
import { type TurnOutcome, turnOutcome } from "../../src/contracts/turn.ts";
import type { TurnPolicy, TurnSuspension } from "../../src/contracts/turnProtocol.ts";
import { addUsage, noUsage, type Usage } from "../../src/contracts/usage.ts";
import type { Episode, Modulators, Sensors, Stance } from "../../src/contracts/workspace.ts";

/** The policy a turn runs with unless its host says otherwise. */
export const defaultTurnPolicy: TurnPolicy = {
  stage_timeout_ms: 10_000,
  agent_timeout_ms: 4_000,
  agent_attempts: 2,
  max_deliberation_rounds: MAX_DELIBERATION_ROUNDS,
  max_voice_retries: 2,
  token_budget: 8_000,
};

/** What a session gives a turn to start it. */
export interface TurnInput {
  session_id: string;
  turn_id: number;
  text: string;
  user_id?: string;
  policy: TurnPolicy;
  /** Carried over from the session's previous turn. */
  modulators: Modulators;
  stance: Stance;
  /** The session's context arena (its compaction summary, the model's last count), carried over. */
  context_arena?: ContextArenaState;
  /** Set when the turn was cancelled before it started (or, later, by `turn.cancel`): why. */
  cancelled?: string;
  /** A turn of the `agents` pipeline: the user's agents it runs (recorded in TURN_STARTED). */
  pipeline?: AgentsPipeline;
}

/** Everything a running turn keeps. */
export interface TurnContext extends TurnInput {
  sensors: Sensors | null;
  workspace: Workspace;
  episodes: Episode[];
  /** The turns after the session's summary, read from memory when the turn compacts (else empty). */
  conversation: Episode[];
  /** Memory's model's summary of them, when it wrote one (null: none; the arena compacts offline). */
  summarised: ModelSummary | null;
  /** What the memory knows of the user, and threads left open, ranked for this turn's message. */
  user_facts: string[];
  open_threads: string[];
  /** Standing instructions on how to answer the user (procedural memory), most recently taught first. */
  procedures: string[];
  /** The persona memory evolved for the session, as text; null while it has none. */
  persona: string | null;
  /** The session's truth and task ledgers in short; null when both are empty. */
  ledgers: LedgerDigest | null;
  /** The session's latest compaction request, read with the ledgers (null: none); pending unless the arena consumed it. */
  compaction_request: RecordedCompactionRequest | null;
  /** The skills activated for the session, read with the ledgers: every agent the turn asks is given them. */
  active_skills: string[];
  /** The session's recorded supplements, read with the ledgers; the arena takes those it has not consumed. */
  supplements: RecordedSupplement[];
  context_arena: ContextArenaState;
  /** The memory agents are told of, as the context arena planned it (null before the agents stage). */
  planned_memory: PlannedMemory | null;
  waves: string[][];
  wave: number;
  /** Agents of the current wave that have neither replied nor failed yet. */
  wave_pending: string[];
  wave_failures: number;
  /** A wave has started and not yet recorded WAVE_COMPLETED. */
  wave_open: boolean;
  wave_stance: Stance;
  round: number;
  consensus: number;
  decision: CouncilDecision | null;
  response: string;
  /** Which rendering of the reply this is (the evaluator loop re-renders). */
  attempt: number;
  /** Critic feedback for the next rendering. */
  feedback: string[];
  /** Chunks sent so far on each open stream. */
  stream_chunks: Partial<Record<StreamId, number>>;
  /** Streams started and not yet ended: a cut-short rendering still ends them. */
  open_streams: StreamId[];
  /** A request interceptor refused the turn. */
  blocked: boolean;
  /** The stage the turn is in, for warnings raised outside any one stage (an interrupt). */
  stage: Stage;
  critics: CriticResult[];
  /** Tokens used, per actor ("agent:<id>", "council", "voice", "critic:<name>"). */
  usage: Record<string, Usage>;
  warnings: TurnWarning[];
  /** An agent's tool call waits for a person's approval: the turn suspends (null: it does not). */
  suspended: TurnSuspension | null;
}

/** The part of an agent's context the context arena plans: what memory and the ledgers bring. */
export type PlannedMemory = Pick<
  AgentContext,
  | "episodes"
  | "user_facts"
  | "open_threads"
  | "procedures"
  | "persona"
  | "ledgers"
  | "summary"
  | "tool_failures"
  | "supplemental"
>;

/** A turn's context before its first stage. */
export const initialContext = ({ input }: { input: TurnInput }): TurnContext => ({
  ...input,
  context_arena: input.context_arena ?? emptyArenaState(),
  planned_memory: null,
  suspended: null,
  sensors: null,
  workspace: {
    claims: [],
    stance: input.stance,
    modulators: input.modulators,
    proposals: [],
  },
  episodes: [],
  conversation: [],
  summarised: null,
  user_facts: [],
  open_threads: [],
  procedures: [],
  persona: null,
  ledgers: null,
  compaction_request: null,
  active_skills: [],
  supplements: [],
  waves: [],
  wave: 0,
  wave_pending: [],
  wave_failures: 0,
  wave_stance: input.stance,
  round: 0,
  consensus: 1,
  decision: null,
  response: "",
  attempt: 1,
  feedback: [],
  stream_chunks: {},
  open_streams: [],
  wave_open: false,
  stage: "ingest",
  blocked: false,
  critics: [],
  usage: {},
  warnings: [],
});

/** Sensors that sense nothing: what the turn uses before (or without) the fast sensors. */
export const zeroSensors = (): Sensors => ({
  vulnerability: 0,
  advice_requested: 0,
  relational_bid: 0,
  ai_feelings_probe: 0,
  humor_masking: 0,
  rupture: 0,
  ambiguity: 0,
  safety_risk: 0,
  prompt_injection: 0,
});

/** Adds one call's (or a stage's) usage, per actor, to the turn's. */
export const mergeUsage = (total: Record<string, Usage>, more: Record<string, Usage>): Record<string, Usage> => {
  const merged = { ...total };
  for (const [actor, usage] of Object.entries(more)) merged[actor] = addUsage(merged[actor] ?? noUsage(), usage);
  return merged;
};

/** What the voice is asked to render now: the council's speech act, and feedback on a re-rendering. */
export const voiceRequest = (context: TurnContext): VoiceRequest => ({
  session_id: context.session_id,
  turn_id: context.turn_id,
  user_message: context.text,
  speech_act: context.decision?.speech_act ?? { intent: "respond", key_points: [], do_not: [] },
  thinking: context.decision?.thinking ?? "",
  feedback: context.feedback,
  attempt: context.attempt,
  ...(context.procedures.length > 0 ? { procedures: context.procedures } : {}),
});

/** What an agent is told of the turn so far: its memory part as the context arena planned it (contextArena.ts). */
export const agentContext = (context: TurnContext): AgentContext => ({
  user_message: context.text,
  sensors: context.sensors ?? zeroSensors(),
  modulators: context.workspace.modulators,
  stance: context.workspace.stance,
  claims: context.workspace.claims,
  ...(context.planned_memory ?? retrievedMemory(context)),
});

/** The memory part of an agent's context as retrieved, before the context arena plans it. */
export const retrievedMemory = (context: TurnContext): PlannedMemory => ({
  episodes: context.episodes,
  ...(context.user_facts.length > 0 ? { user_facts: context.user_facts } : {}),
  ...(context.open_threads.length > 0 ? { open_threads: context.open_threads } : {}),
  ...(context.procedures.length > 0 ? { procedures: context.procedures } : {}),
  ...(context.persona ? { persona: context.persona } : {}),
  ...(context.ledgers ? { ledgers: context.ledgers } : {}),
});

/** COUNCIL_DECISION_MADE's payload for a decision. */
export function decisionPayload(decision: CouncilDecision): EventPayload<"COUNCIL_DECISION_MADE"> {
  return {
    speak: decision.speak,
    urgency: decision.urgency,
    intent: decision.speech_act.intent,
    key_points: decision.speech_act.key_points,
    do_not: decision.speech_act.do_not,
    thinking: decision.thinking,
  };
}

/** The reply to a turn a request interceptor refused. */
export const REFUSAL_REPLY = "I can't help with that request, but I'm glad to help with something else.";

/** Said when the safety council itself cannot be reached: the one reply a turn may never lack. */
export const SAFETY_FALLBACK_REPLY =
  "I want to make sure you're safe. If you might act on thoughts of harming yourself or someone else, please contact local emergency services or a crisis line now. I'm here to listen.";

/** How the turn ended: Cancelled when a client cancelled it, else from its warnings. */
export const outcomeOf = (context: Pick<TurnContext, "cancelled" | "warnings">): TurnOutcome =>
  context.cancelled !== undefined ? { status: "Cancelled", reason: context.cancelled } : turnOutcome(context.warnings);
