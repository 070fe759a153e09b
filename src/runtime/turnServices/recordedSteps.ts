/**
 * A taken-over pipeline turn repeats nothing: the steps an earlier attempt
 * recorded in the turn's event log (memory retrieval, by reference: its
 * records are read by id from the memory store, not ranked again; the schedule, each
 * agent's answer, each deliberation round, the council's decision, each
 * rendering of the voice, each critics' verdict, the memory commit) are
 * answered from the log, not asked again, and their events are not
 * appended twice. Steps not recorded are made as usual; the log goes on
 * after what is stored (TURN_RESUMED `from: "last_step"`).
 *
 * Two parts, both built from the turn's stored events:
 * - `recordedStepsInterceptor`: a turn interceptor that answers a call from the
 *   record when the same step is recorded, and calls through otherwise;
 * - `RecordedSteps.admit`: the filter of the turn's records, which drops an
 *   event the log already holds (the replayed machine emits the recorded
 *   steps' events again) and marks a stream the takeover cut off as restarted.
 */
import type { AgentReply } from "../../contracts/agent.ts";
import type { ModelSummary } from "../../contracts/context.ts";
import type { CouncilDecision, CouncilReply, SafetyCouncilReply, VoiceReply } from "../../contracts/council.ts";
import type { CriticsVerdict } from "../../contracts/critic.ts";
import { ErrorCode } from "../../contracts/errors.ts";
import type { EngineEvent, EventKind, EventPayload } from "../../contracts/events.ts";
import { isRetrievedRefs, type MemoryCommitReply, type MemoryRetrievedPayload } from "../../contracts/memory.ts";
import type { PlanWavesReply } from "../../contracts/scheduler.ts";
import type { DeliberateInput, DeliberateOutput, TurnRecord } from "../../contracts/turnProtocol.ts";
import { ConclaveError } from "../../errors.ts";
import type { TurnInterceptor } from "./turnInterceptor.ts";

/** An agent's failure an earlier attempt recorded, given back as it was (the agent is not asked again). */
export class RecordedFailure extends ConclaveError<ErrorCode> {}

type Payload<K extends EventKind> = EventPayload<K>;

/** The calls of a turn that can be answered from the record: what `beforeLive` is told is about to be made. */
export type LiveStep =
  | "memory"
  | "schedule"
  | "agent"
  | "deliberation"
  | "council"
  | "safety_council"
  | "voice"
  | "critics"
  | "memory_commit";

/**
 * The identity of an event the turn machine emits again when it replays a
 * recorded step: two events with the same key are the same step's. Null:
 * never dropped (streams and interceptions come only from live calls; the
 * terminal event is never stored before a takeover).
 */
function stepKey(record: { kind: string; payload: unknown }): string | null {
  const p = record.payload as Record<string, unknown>;
  switch (record.kind) {
    case "TURN_STARTED":
    case "SENSORS_FAST_UPDATED":
    case "SAFETY_INTERRUPT":
    case "MEMORY_RETRIEVED":
    case "CONTEXT_COMPACTED":
    case "CONTEXT_PLANNED":
    case "SCHEDULE_PLANNED":
    case "COUNCIL_DECISION_MADE":
    case "MEMORY_COMMITTED":
    case "STANCE_UPDATED":
      return record.kind;
    case "TURN_STAGE_CHANGED":
      return `${record.kind}:${p.stage}`;
    case "REQUEST_INTERCEPTED":
      return `${record.kind}:${p.interceptor}:${p.action}`;
    case "WORKSPACE_PATCHED":
      return `${record.kind}:${(p.patch as { wave?: number }).wave ?? "context"}`;
    case "WAVE_STARTED":
    case "WAVE_COMPLETED":
      return `${record.kind}:${p.wave}`;
    case "AGENT_COMPLETED":
    case "AGENT_FAILED":
      return `agent:${p.wave}:${p.agent_id}`;
    case "DELIB_ROUND_STARTED":
    case "CONSENSUS_UPDATED":
    case "DELIB_ROUND_COMPLETED":
      return `${record.kind}:${p.round}`;
    case "VOICE_RENDERED":
    case "CRITICS_UPDATED":
      return `${record.kind}:${p.attempt}`;
    case "STAGE_WARNING":
      return `${record.kind}:${p.stage}:${p.code}:${p.subject ?? ""}:${p.message}`;
    default:
      return null;
  }
}

/** Events of one kind, by a key of their payload (the last one stored wins). */
const byKey = <K extends EventKind>(events: readonly EngineEvent[], kind: K, key: (payload: Payload<K>) => string) => {
  const found = new Map<string, Payload<K>>();
  for (const event of events)
    if (event.kind === kind) found.set(key(event.payload as Payload<K>), event.payload as Payload<K>);
  return found;
};

/**
 * What the earlier attempts of one pipeline turn recorded, read from its
 * stored events: the answers of its steps, and which events the log holds.
 * Only the events after the last TURN_RESUMED that restarted the turn from
 * ingest count (before it: an abandoned attempt, from a runner that did not
 * resume from the log).
 */
export class RecordedSteps {
  readonly #events: readonly EngineEvent[];
  /** How many more times each step key may be dropped: the stored events of that key not yet replayed. */
  readonly #unreplayed = new Map<string, number>();
  /** `<stream_id>:<attempt>` of every stream the log holds a STREAM_START of. */
  readonly #streams = new Set<string>();
  readonly #agents: Map<string, Payload<"AGENT_COMPLETED"> | Payload<"AGENT_FAILED">>;
  readonly #consensus: Map<string, Payload<"CONSENSUS_UPDATED">>;
  readonly #rounds: Map<string, Payload<"DELIB_ROUND_COMPLETED">>;
  readonly #renderings: Map<string, Payload<"VOICE_RENDERED">>;
  readonly #verdicts: Map<string, Payload<"CRITICS_UPDATED">>;

  constructor(stored: readonly EngineEvent[]) {
    const restart = stored.findLastIndex(
      (event) => event.kind === "TURN_RESUMED" && event.payload.from !== "last_step",
    );
    const events = stored.slice(restart + 1);
    this.#events = events;
    for (const event of events) {
      const key = stepKey(event);
      if (key !== null) this.#unreplayed.set(key, (this.#unreplayed.get(key) ?? 0) + 1);
      if (event.kind === "STREAM_START") this.#streams.add(`${event.payload.stream_id}:${event.payload.attempt}`);
    }
    this.#agents = new Map();
    for (const event of events) {
      if (event.kind === "AGENT_COMPLETED" || event.kind === "AGENT_FAILED")
        this.#agents.set(`${event.payload.wave}:${event.payload.agent_id}`, event.payload);
    }
    this.#consensus = byKey(events, "CONSENSUS_UPDATED", (p) => String(p.round));
    this.#rounds = byKey(events, "DELIB_ROUND_COMPLETED", (p) => String(p.round));
    this.#renderings = byKey(events, "VOICE_RENDERED", (p) => String(p.attempt));
    this.#verdicts = byKey(events, "CRITICS_UPDATED", (p) => String(p.attempt));
  }

  /** True when the earlier attempts recorded anything of the turn's pipeline. */
  get any(): boolean {
    return this.#unreplayed.size > 0;
  }

  #last<K extends EventKind>(kind: K): Payload<K> | undefined {
    const found = this.#events.findLast((event) => event.kind === kind);
    return found?.payload as Payload<K> | undefined;
  }

  /** The recorded retrieval: its references (resolved by the interceptor), or an older log's text. */
  memory(): MemoryRetrievedPayload | undefined {
    return this.#last("MEMORY_RETRIEVED");
  }

  /**
   * The summary memory's model wrote for the turn's compaction, as its CONTEXT_COMPACTED recorded it
   * (undefined when the turn compacted offline, or did not compact before it was taken over).
   */
  modelSummary(): ModelSummary | undefined {
    const compacted = this.#last("CONTEXT_COMPACTED");
    if (compacted?.summariser !== "model" || !compacted.usage) return undefined;
    return {
      through_turn: compacted.through_turn,
      text: compacted.summary,
      turns: compacted.turns_compacted,
      usage: compacted.usage,
    };
  }

  schedule(): PlanWavesReply | undefined {
    return this.#last("SCHEDULE_PLANNED");
  }

  /** An agent's answer in a wave: its reply, or the failure recorded (thrown back). */
  agent(wave: number, agentId: string): { reply: AgentReply } | { failure: RecordedFailure } | undefined {
    const recorded = this.#agents.get(`${wave}:${agentId}`);
    if (!recorded) return undefined;
    if ("code" in recorded) {
      const code = ErrorCode.safeParse(recorded.code);
      return { failure: new RecordedFailure(code.success ? code.data : "agent_failed", recorded.message) };
    }
    return {
      reply: {
        agent_id: recorded.agent_id,
        ...(recorded.output !== undefined ? { output: recorded.output } : {}),
        contribution: recorded.contribution,
        elapsed_ms: recorded.elapsed_ms,
        worker: recorded.worker,
        ...(recorded.usage ? { usage: recorded.usage } : {}),
        ...(recorded.skills ? { skills: recorded.skills } : {}),
        ...(recorded.routing_usage ? { routing_usage: recorded.routing_usage } : {}),
      },
    };
  }

  /** A deliberation round, from its CONSENSUS_UPDATED and DELIB_ROUND_COMPLETED. */
  round(input: Pick<DeliberateInput, "round" | "workspace">): DeliberateOutput | undefined {
    const consensus = this.#consensus.get(String(input.round));
    const completed = this.#rounds.get(String(input.round));
    if (!consensus || !completed) return undefined;
    return {
      // Revisions change claims and proposals; the stance moves only in the waves.
      workspace: {
        ...input.workspace,
        claims: consensus.claims,
        proposals: completed.proposals ?? input.workspace.proposals,
      },
      consensus: completed.consensus,
      revisions: completed.revisions,
      usage: completed.usage ?? {},
    };
  }

  #decision(): CouncilDecision | undefined {
    const made = this.#last("COUNCIL_DECISION_MADE");
    if (!made) return undefined;
    return {
      speak: made.speak,
      urgency: made.urgency as CouncilDecision["urgency"],
      speech_act: { intent: made.intent, key_points: made.key_points, do_not: made.do_not },
      thinking: made.thinking,
    };
  }

  decision(): CouncilReply | undefined {
    const decision = this.#decision();
    const { usage, fallback } = this.#last("COUNCIL_DECISION_MADE") ?? {};
    return decision ? { decision, ...(usage ? { usage } : {}), ...(fallback ? { fallback } : {}) } : undefined;
  }

  /** The safety council's answer: its decision and the words it rendered (attempt 1). */
  safetyCouncil(): SafetyCouncilReply | undefined {
    const decision = this.#decision();
    const rendered = this.#renderings.get("1");
    return decision && rendered ? { decision, text: rendered.text } : undefined;
  }

  rendering(attempt: number): VoiceReply | undefined {
    const rendered = this.#renderings.get(String(attempt));
    if (!rendered) return undefined;
    const { text, usage, fallback } = rendered;
    return { text, ...(usage ? { usage } : {}), ...(fallback ? { fallback } : {}) };
  }

  verdict(attempt: number): CriticsVerdict | undefined {
    const judged = this.#verdicts.get(String(attempt));
    return judged ? { results: judged.results, failures: judged.failures ?? [], usage: judged.usage ?? {} } : undefined;
  }

  commit(): MemoryCommitReply | undefined {
    const committed = this.#last("MEMORY_COMMITTED");
    if (!committed) return undefined;
    return {
      summary: committed.summary,
      stored: committed.stored,
      ...(committed.warnings ? { warnings: committed.warnings } : {}),
      ...(committed.usage ? { usage: committed.usage } : {}),
    };
  }

  /**
   * What of one record of the replayed turn goes to the log: null when the
   * log already holds it (a recorded step's event, emitted again); a stream
   * the log holds the start of (cut off by the takeover, now made again) is
   * marked `restarted`; anything else as it is.
   */
  admit(record: TurnRecord): TurnRecord | null {
    if (record.kind === "STREAM_START") {
      const { stream_id, attempt } = record.payload;
      return this.#streams.has(`${stream_id}:${attempt}`)
        ? { ...record, payload: { ...record.payload, restarted: true } }
        : record;
    }
    const key = stepKey(record);
    const left = key === null ? 0 : (this.#unreplayed.get(key) ?? 0);
    if (key === null || left === 0) return record;
    this.#unreplayed.set(key, left - 1);
    return null;
  }
}

/** One RecordedSteps per stored log (the array `EventLogWriter.open` was given): its drops are counted once. */
const built = new WeakMap<readonly EngineEvent[], RecordedSteps>();

/** The recorded steps of a turn from its stored events; undefined when nothing of its pipeline is stored. */
export function recordedStepsOf(stored: readonly EngineEvent[]): RecordedSteps | undefined {
  if (stored.length === 0) return undefined;
  let steps = built.get(stored);
  if (!steps) {
    steps = new RecordedSteps(stored);
    built.set(stored, steps);
  }
  return steps.any ? steps : undefined;
}

export interface RecordedStepsOptions {
  /**
   * Called before a step is made live (it is not recorded), with the turn and the voice's or critics'
   * attempt: where a test's failpoint stops the runner. Default: nothing.
   */
  beforeLive?: (step: LiveStep, turn: { session_id: string; turn_id: number }, attempt: number) => Promise<void> | void;
}

/**
 * The interceptor answering, for a turn taken over, every step its earlier
 * attempts recorded from the record (`stepsOf` finds them by session and
 * turn), and passing the rest on. A recorded answer is the one the turn got
 * then (after every interceptor below this one), so this one is outermost;
 * its stream parts are not sent again (the log holds them). `senseFast` and
 * `screen` are deterministic: made again, not intercepted.
 */
export function recordedStepsInterceptor(
  stepsOf: (sessionId: string, turnId: number) => RecordedSteps | undefined,
  options: RecordedStepsOptions = {},
): TurnInterceptor {
  const live = async (step: LiveStep, turn: { session_id: string; turn_id: number }, attempt = 1) => {
    await options.beforeLive?.(step, turn, attempt);
  };
  return {
    retrieveMemory: async (input, next) => {
      const { request } = input;
      // A read by reference (a compaction's read of the conversation) is no retrieval: read live, as asked;
      // but the summary memory's model wrote of it is not asked again: the recorded one is given back.
      if (request.resolve) {
        const written = request.summarise ? stepsOf(request.session_id, request.turn_id)?.modelSummary() : undefined;
        if (!written) return next(input);
        const { summarise: _asked, ...read } = request;
        return { ...(await next({ ...input, request: read })), summary: written };
      }
      const recorded = stepsOf(request.session_id, request.turn_id)?.memory();
      // References are resolved: a read of the records they name, as stored now (not a retrieval).
      if (recorded && isRetrievedRefs(recorded)) {
        const {
          ledgers,
          usage: _reread,
          ...read
        } = await next({
          ...input,
          request: { ...request, resolve: recorded.refs },
        });
        // The usage the recorded retrieval's model calls had (a read of references makes none).
        const resolved = recorded.usage ? { ...read, usage: recorded.usage } : read;
        // The ledgers' digest as the recorded attempt had it: read again if it was given, else none.
        return recorded.ledgers && ledgers ? { ...resolved, ledgers } : resolved;
      }
      if (recorded) return recorded;
      await live("memory", request);
      return next(input);
    },
    planWaves: async (input, next) => {
      const { request } = input;
      const recorded = stepsOf(request.session_id, request.turn_id)?.schedule();
      if (recorded) return recorded;
      await live("schedule", request);
      return next(input);
    },
    callAgent: async (input, next) => {
      const { request } = input;
      // Waves only: revisions are recorded by round (deliberate), recipe nodes by their own steps.
      const recorded =
        request.mode === "respond" && request.recipe === undefined
          ? stepsOf(request.session_id, request.turn_id)?.agent(request.wave, request.agent_id)
          : undefined;
      if (recorded && "failure" in recorded) throw recorded.failure;
      if (recorded) return recorded.reply;
      await live("agent", request);
      return next(input);
    },
    deliberate: async (input, next) => {
      const { request } = input;
      const recorded = stepsOf(request.session_id, request.turn_id)?.round(request);
      if (recorded) return recorded;
      await live("deliberation", request);
      return next(input);
    },
    decide: async (input, next) => {
      const { request } = input;
      const recorded = stepsOf(request.session_id, request.turn_id)?.decision();
      if (recorded) return recorded;
      await live("council", request);
      return next(input);
    },
    safetyCouncil: async (input, next) => {
      const { request } = input;
      const recorded = stepsOf(request.session_id, request.turn_id)?.safetyCouncil();
      if (recorded) return recorded;
      await live("safety_council", request);
      return next(input);
    },
    renderVoice: async (input, next) => {
      const { request } = input;
      const recorded = stepsOf(request.session_id, request.turn_id)?.rendering(request.attempt);
      if (recorded) return recorded;
      await live("voice", request, request.attempt);
      return next(input);
    },
    runCritics: async (input, next) => {
      const { request } = input;
      const recorded = stepsOf(request.session_id, request.turn_id)?.verdict(request.attempt);
      if (recorded) return recorded;
      await live("critics", request, request.attempt);
      return next(input);
    },
    commitMemory: async (input, next) => {
      const { session_id, turn_id } = input.request.episode;
      const recorded = stepsOf(session_id, turn_id)?.commit();
      if (recorded) return recorded;
      await live("memory_commit", { session_id, turn_id });
      return next(input);
    },
  };
}
