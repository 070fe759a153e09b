import type { AnyMachineSnapshot, AnyTransitionDefinition } from "xstate";
import type { TurnContext } from "../../machines/turn/index.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { type Macrostep, nodeIds } from "./harness.ts";

/** One record as a token of the spec: its kind, with the stage for stage changes and warnings. */
const token = (record: TurnRecord): string =>
  record.kind === "TURN_STAGE_CHANGED"
    ? `stage:${record.payload.stage}`
    : record.kind === "STAGE_WARNING"
      ? `warn:${record.payload.stage}`
      : record.kind;

/** What entering a state records (docs/protocol.md, "Reading a turn's events"). */
const ENTRY: Record<string, string> = {
  "turn.ingest": "TURN_STARTED stage:ingest ",
  "turn.sensing_fast": "stage:sensing_fast ",
  "turn.safety": "SAFETY_INTERRUPT ",
  "turn.context": "stage:context ",
  // The context arena plans the agents' context (compacting first at the configured pressure).
  "turn.agents": "stage:agents (?:CONTEXT_COMPACTED )?CONTEXT_PLANNED ",
  "turn.agents.wave": "WAVE_STARTED ",
  "turn.deliberation": "stage:deliberation ",
  "turn.deliberation.round": "DELIB_ROUND_STARTED ",
  "turn.council": "stage:council ",
  "turn.critics": "stage:critics ",
  "turn.memory_commit": "stage:memory_commit ",
  "turn.completed": "TURN_COMPLETED ",
  "turn.suspended": "TURN_SUSPENDED ",
};

const opt = (tokens: string) => `(?:${tokens})?`;
const many = (tokens: string) => `(?:${tokens})*`;
const times = (tokens: string, n: number) => tokens.repeat(n);
const CLOSE_WAVE = `WORKSPACE_PATCHED ${opt("STANCE_UPDATED ")}WAVE_COMPLETED `;
const abandonedWave = (before: TurnContext) =>
  before.wave_open ? `${times("AGENT_FAILED ", before.wave_pending.length)}${CLOSE_WAVE}` : "";
const openStreamEnds = (before: TurnContext) => times("STREAM_END ", before.open_streams.length);
// Leaving a wave, its exit closes the agents' open streams first; the voice's are closed by the transition.
const cutShort = (before: TurnContext) =>
  before.wave_open
    ? `${openStreamEnds(before)}${abandonedWave(before)}`
    : `${abandonedWave(before)}${openStreamEnds(before)}`;
const voiceSpec = (
  stage: string,
  source: string,
  done: string,
): Record<string, string | ((before: TurnContext) => string)> => ({
  [`${source} → ${source} : voice.start`]: "STREAM_START ",
  [`${source} → ${source} : voice.chunk`]: "STREAM_CHUNK ",
  [`${source} → ${source} : voice.end`]: "STREAM_END ",
  [`${source} → ${source} : voice.intercepted`]: "RESPONSE_INTERCEPTED ",
  [`${source} → ${done} : voice.done`]: "VOICE_RENDERED ",
  [`${source} → turn.${stage}.done : voice.failed`]: (before) => `${openStreamEnds(before)}warn:${stage} `,
  [`${source} → turn.${stage}.done : renderVoice error`]: `warn:${stage} `,
});

/**
 * What each transition records by its own actions, as a pattern over record tokens,
 * given the context before it (docs/protocol.md: a stage that fails or misses its deadline adds
 * a STAGE_WARNING tagged with the stage; per wave WAVE_STARTED … WAVE_COMPLETED; …).
 * `$stage` is the stage the turn is in (its last TURN_STAGE_CHANGED).
 */
export const TRANSITION_RECORDS: Record<string, string | ((before: TurnContext) => string)> = {
  // Leaving mid-wave or mid-stream still closes them: every agent pending fails, the wave gets its
  // WAVE_COMPLETED, every open stream its STREAM_END.
  "turn → turn.completed : turn.interrupt": (before) => `${cutShort(before)}warn:$stage `,
  // A client's cancellation: the same, without a warning (the outcome says Cancelled).
  "turn → turn.completed : turn.cancel": (before) => cutShort(before),
  "turn.ingest → turn.completed : always [cancelledBeforeStart]": "",
  "turn.ingest → turn.sensing_fast : always": "",
  "turn.sensing_fast → turn.sensed : senseFast done": "SENSORS_FAST_UPDATED ",
  "turn.sensing_fast → turn.context : senseFast error": "warn:sensing_fast ",
  "turn.sensing_fast → turn.context : after stageTimeout": "warn:sensing_fast ",
  "turn.sensed → turn.safety : always [safetyRisk]": "",
  "turn.sensed → turn.screening : always": "",
  "turn.screening → turn.screened : screen done": many("REQUEST_INTERCEPTED "),
  "turn.screening → turn.context : screen error": "warn:sensing_fast ",
  "turn.screening → turn.context : after stageTimeout": "warn:sensing_fast ",
  "turn.screened → turn.completed : always [requestBlocked]": "VOICE_RENDERED ",
  "turn.screened → turn.context : always": "",
  "turn.safety → turn.completed : safetyCouncil done": "COUNCIL_DECISION_MADE VOICE_RENDERED ",
  "turn.safety → turn.completed : safetyCouncil error": "warn:safety VOICE_RENDERED ",
  "turn.safety → turn.completed : after stageTimeout": "warn:safety VOICE_RENDERED ",
  "turn.context → turn.agents : retrieveMemory done": "MEMORY_RETRIEVED WORKSPACE_PATCHED ",
  "turn.context → turn.agents : retrieveMemory error": "warn:context ",
  "turn.context → turn.agents : after stageTimeout": "warn:context ",
  "turn.agents → turn.deliberation : done": "",
  // The stage deadline can cut a wave (default policy: a stage has 10 s, a wave 2 × 4 s + 250 ms): its
  // pending agents fail and the wave is closed.
  "turn.agents → turn.deliberation : after stageTimeout": (before) => `${cutShort(before)}warn:agents `,
  "turn.agents.planning → turn.agents.planned : planWaves done": "SCHEDULE_PLANNED ",
  "turn.agents.planning → turn.agents.done : planWaves error": "warn:agents ",
  "turn.agents.planned → turn.agents.wave : always [hasWaves]": "",
  "turn.agents.planned → turn.agents.done : always": "",
  "turn.agents.wave → turn.agents.wave : agent.replied": "AGENT_COMPLETED ",
  "turn.agents.wave → turn.agents.wave : agent.failed": "AGENT_FAILED warn:agents ",
  // A tool call waits for approval: the turn suspends; the wave is not closed (the turn runs again from its log).
  "turn.agents.wave → turn.suspended : agent.approval_required": (before) =>
    `${openStreamEnds(before)}HUMAN_INPUT_REQUESTED `,
  "turn.agents.wave → turn.agents.wave : agent.stream.start": "STREAM_START ",
  "turn.agents.wave → turn.agents.wave : agent.stream.chunk": "STREAM_CHUNK ",
  "turn.agents.wave → turn.agents.wave : agent.stream.end": "STREAM_END ",
  // The response chain redacted or blocked part of an agent's stream.
  "turn.agents.wave → turn.agents.wave : agent.stream.intercepted": "RESPONSE_INTERCEPTED ",
  "turn.agents.wave → turn.agents.wave : wave.done [hasMoreWaves]": (before) =>
    `${openStreamEnds(before)}${CLOSE_WAVE}`,
  "turn.agents.wave → turn.agents.done : wave.done": (before) => `${openStreamEnds(before)}${CLOSE_WAVE}`,
  "turn.agents.wave → turn.agents.done : runWave error": (before) =>
    `${openStreamEnds(before)}warn:agents ${CLOSE_WAVE}`,
  // Every agent still pending when the wave's deadline passes is a timeout.
  "turn.agents.wave → turn.agents.wave : after waveTimeout [hasMoreWaves]": (before) =>
    `${openStreamEnds(before)}${times("AGENT_FAILED warn:agents ", before.wave_pending.length)}${CLOSE_WAVE}`,
  "turn.agents.wave → turn.agents.done : after waveTimeout": (before) =>
    `${openStreamEnds(before)}${times("AGENT_FAILED warn:agents ", before.wave_pending.length)}${CLOSE_WAVE}`,
  "turn.deliberation → turn.council : done": "",
  "turn.deliberation → turn.council : after stageTimeout": "warn:deliberation ",
  "turn.deliberation.round → turn.deliberation.settling : deliberate done": "CONSENSUS_UPDATED DELIB_ROUND_COMPLETED ",
  "turn.deliberation.round → turn.deliberation.done : deliberate error": "warn:deliberation ",
  "turn.deliberation.settling → turn.deliberation.done : always [deliberationSettled]": "",
  "turn.deliberation.settling → turn.deliberation.round : always": "",
  "turn.council → turn.critics : done": "",
  "turn.council → turn.critics : after stageTimeout": (before) => `${openStreamEnds(before)}warn:council `,
  "turn.council.deciding → turn.council.decided : decide done": "COUNCIL_DECISION_MADE ",
  "turn.council.deciding → turn.council.done : decide error": "warn:council ",
  "turn.council.decided → turn.council.speaking : always [councilSpeaks]": "",
  "turn.council.decided → turn.council.done : always": "",
  ...voiceSpec("council", "turn.council.speaking", "turn.council.done"),
  "turn.critics → turn.memory_commit : done": "",
  "turn.critics → turn.memory_commit : after stageTimeout": (before) => `${openStreamEnds(before)}warn:critics `,
  // Critics that could not judge at all are warnings beside the verdict.
  "turn.critics.judging → turn.critics.verdict : runCritics done": `CRITICS_UPDATED ${many("warn:critics ")}`,
  "turn.critics.judging → turn.critics.done : runCritics error": "warn:critics ",
  "turn.critics.verdict → turn.critics.done : always [criticsPassed]": "",
  "turn.critics.verdict → turn.critics.revising : always [mayRetryVoice]": "",
  // Retries spent and a critic still objects: one warning per failing critic.
  "turn.critics.verdict → turn.critics.done : always": (before) =>
    times("warn:critics ", before.critics.filter((critic) => !critic.passed).length),
  ...voiceSpec("critics", "turn.critics.revising", "turn.critics.judging"),
  "turn.memory_commit → turn.completed : commitMemory done": "MEMORY_COMMITTED ",
  "turn.memory_commit → turn.completed : commitMemory error": "warn:memory_commit ",
  "turn.memory_commit → turn.completed : after stageTimeout": "warn:memory_commit ",
};

/** What a replay checks beyond the states: the records of each macrostep, and the turn's contract as a whole. */
export class RecordChecker {
  private stage = "ingest";
  private waves = 0;
  private readonly chunks = new Map<string, number>();
  /** Streams started and not yet ended. */
  private readonly open = new Set<string>();
  readonly records: TurnRecord[] = [];
  private last: AnyMachineSnapshot | undefined;

  constructor(
    private readonly edgeKeys: (transition: AnyTransitionDefinition) => string[],
    private readonly initialNodes: string[],
  ) {}

  check(step: Macrostep): string | undefined {
    // The first macrostep enters the initial states before its eventless transitions.
    let expected = this.last ? "" : this.initialNodes.map((id) => ENTRY[id] ?? "").join("");
    let previous = this.last ?? step.microsteps[0]?.snapshot ?? step.snapshot;
    let active = new Set(this.last ? nodeIds(previous) : this.initialNodes);
    for (const microstep of step.microsteps) {
      const after = nodeIds(microstep.snapshot);
      const reentered = new Set<string>();
      for (const transition of microstep.transitions) {
        for (const key of this.edgeKeys(transition)) {
          const spec = TRANSITION_RECORDS[key];
          if (spec === undefined) return `no record spec for ${key}`;
          expected += (typeof spec === "function" ? spec(previous.context as TurnContext) : spec).replaceAll(
            "$stage",
            this.stage,
          );
        }
        for (const target of transition.reenter ? (transition.target ?? []) : []) {
          for (const id of after) if (id === target.id || id.startsWith(`${target.id}.`)) reentered.add(id);
        }
      }
      for (const id of after) if (!active.has(id) || reentered.has(id)) expected += ENTRY[id] ?? "";
      active = new Set(after);
      previous = microstep.snapshot;
    }
    const records = step.emitted as TurnRecord[];
    const actual = records.map((record) => `${token(record)} `).join("");
    if (!new RegExp(`^${expected}$`).test(actual)) {
      return `${step.event.type} recorded ${JSON.stringify(actual.trim())}, the spec says ${JSON.stringify(expected.trim())}`;
    }
    const cancelled = (step.snapshot.context as TurnContext).cancelled;
    for (const record of records) {
      const problem = this.payload(record, cancelled);
      if (problem) return problem;
      this.records.push(record);
    }
    this.last = step.snapshot;
    return undefined;
  }

  /** Payload rules any log reader relies on. */
  private payload(record: TurnRecord, cancelled: string | undefined): string | undefined {
    switch (record.kind) {
      case "TURN_STAGE_CHANGED":
        this.stage = record.payload.stage;
        return undefined;
      case "SAFETY_INTERRUPT":
        // The safety branch is no pipeline stage, but what goes wrong there is tagged "safety".
        this.stage = "safety";
        return undefined;
      case "WAVE_STARTED":
        if (record.payload.wave !== this.waves)
          return `WAVE_STARTED wave ${record.payload.wave}, expected ${this.waves}`;
        this.waves += 1;
        return undefined;
      case "STREAM_START":
        this.chunks.set(record.payload.stream_id, 0);
        this.open.add(record.payload.stream_id);
        return undefined;
      case "STREAM_CHUNK": {
        const index = this.chunks.get(record.payload.stream_id);
        if (index === undefined) return `STREAM_CHUNK on ${record.payload.stream_id} before its STREAM_START`;
        if (record.payload.index !== index) return `STREAM_CHUNK index ${record.payload.index}, expected ${index}`;
        this.chunks.set(record.payload.stream_id, index + 1);
        return undefined;
      }
      case "STREAM_END": {
        const count = this.chunks.get(record.payload.stream_id);
        if (count !== record.payload.chunks)
          return `STREAM_END says ${record.payload.chunks} chunks, ${count} were sent`;
        this.open.delete(record.payload.stream_id);
        return undefined;
      }
      case "RESPONSE_INTERCEPTED":
        // What an interceptor did names the stream it did it on, while that stream is open.
        if (!this.open.has(record.payload.stream_id))
          return `RESPONSE_INTERCEPTED on ${record.payload.stream_id}, which is not open`;
        return undefined;
      case "TURN_COMPLETED": {
        const warned = this.records.some((earlier) => earlier.kind === "STAGE_WARNING");
        const rendered = this.records.filter((earlier) => earlier.kind === "VOICE_RENDERED").at(-1);
        const text = rendered?.kind === "VOICE_RENDERED" ? rendered.payload.text : "";
        // Cancelled when a client cancelled it (whatever its warnings), else as its warnings say.
        if (cancelled !== undefined) {
          if (JSON.stringify(record.payload.outcome) !== JSON.stringify({ status: "Cancelled", reason: cancelled }))
            return `TURN_COMPLETED outcome ${JSON.stringify(record.payload.outcome)} for a turn cancelled (${cancelled})`;
        } else if (record.payload.outcome.status !== (warned ? "PartialSuccess" : "Complete"))
          return `TURN_COMPLETED outcome ${record.payload.outcome.status} with${warned ? "" : "out"} warnings`;
        if (record.payload.response !== text)
          return `TURN_COMPLETED response ${JSON.stringify(record.payload.response)}, last rendering ${JSON.stringify(text)}`;
        return undefined;
      }
      default:
        return undefined;
    }
  }
}
