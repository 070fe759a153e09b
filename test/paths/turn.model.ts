import { type AnyEventObject, type AnyMachineSnapshot, type AnyTransitionDefinition, createActor } from "xstate";
import { AGENTS } from "../../agents/index.ts";
import { defaultTurnPolicy, type TurnContext, type TurnInput } from "../../machines/turn/index.ts";
import { planWaves } from "../../src/cognition/scheduler.ts";
import type { InterceptedPart, VoiceStreamPart } from "../../src/cognition/voice.ts";
import type { AgentRequest } from "../../src/contracts/agent.ts";
import type { VoiceReply, VoiceRequest } from "../../src/contracts/council.ts";
import type { RunWaveInput, TurnOutput, TurnPolicy, TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { withInterceptors } from "../../src/runtime/intercepted.ts";
import {
  defaultInterceptors,
  type InterceptorChains,
  type ResponseInterceptor,
} from "../../src/runtime/interceptors.ts";
import { localTurnServices } from "../../src/runtime/localTurnServices.ts";
import { provideTurn } from "../../src/runtime/provideTurn.ts";
import type { TurnServices } from "../../src/runtime/turnServices.ts";
import {
  AFTER,
  activeNodes,
  type Coverage,
  childInput,
  DONE_ACTOR,
  DONE_STATE,
  ERROR_ACTOR,
  Gates,
  initialConfiguration,
  invokeSrc,
  type Macrostep,
  ManualClock,
  type Model,
  nodeIds,
  type Oracle,
  type Outcome,
  ownEvents,
  type Path,
  Recorder,
  replayPath,
  SteeredFault,
} from "./harness.ts";

/**
 * The turn machine under model-based test. The model is the real `turnMachine`
 * provided with the real services (`localTurnServices()` behind the runner's
 * interceptor chains, as `provideTurn` gives them to a session); its event samples
 * are what those services really return for the input the machine gives them, plus
 * steered faults (a service that throws, one that never answers so a deadline fires,
 * an interrupt) in the stages a scenario names.
 */

export const NOW = 1_700_000_000_000;
const VOICE_PARTS = new Set(["voice.start", "voice.chunk", "voice.end", "voice.intercepted"]);
const CALLBACKS = new Set(["runWave", "renderVoice"]);

/** A deployment choice some scenarios make: the council's thinking is never streamed to the user. */
export const privateThinking: ResponseInterceptor = {
  name: "private_thinking",
  onPacket: ({ stream_id }) =>
    stream_id === "thinking" ? { action: "block", reason: "thinking is not shown to users" } : { action: "pass" },
};

export interface TurnScenario {
  name: string;
  text: string;
  policy?: Partial<TurnPolicy>;
  /** The interceptor chains (default: the runner's, `defaultInterceptors()`). */
  chains?: () => InterceptorChains;
  /** The scheduler's roster (default: every agent of agents/). */
  roster?: "without_always_on";
  /** Top-level states where steered events (faults, deadlines, interrupts) are sampled. */
  faults: "all" | readonly string[];
  /** Top-level states whose simple paths are enumerated (joined to the shortest path into the state). */
  simple?: readonly string[];
}

/** The real services of a scenario: a fresh instance, as a runner gives each turn. */
export function realServices(scenario: TurnScenario): TurnServices {
  const services = withInterceptors(
    localTurnServices(() => NOW),
    (scenario.chains ?? defaultInterceptors)(),
  );
  if (scenario.roster === "without_always_on") {
    const manifests = [...AGENTS.values()]
      .map((agent) => agent.manifest)
      .filter((manifest) => manifest.priority !== "ALWAYS_ON");
    services.planWaves = async (request) => {
      const { cooldowns: _cooldowns, ...plan } = planWaves(manifests, {
        sensors: request.sensors,
        modulators: request.modulators,
        tokenBudget: request.token_budget,
        cooldowns: {},
        now: NOW,
      });
      return plan;
    };
  }
  return services;
}

export const turnInput = (scenario: TurnScenario): TurnInput => ({
  session_id: `paths-${scenario.name}`,
  turn_id: 1,
  text: scenario.text,
  policy: { ...defaultTurnPolicy, ...scenario.policy },
  modulators: neutralModulators(),
  stance: neutralStance(),
});

/** The invoked promise actors of the turn, called as `provideTurn` calls them. */
const PROMISE_SERVICES: Record<
  string,
  (services: TurnServices, input: never, signal: AbortSignal) => Promise<unknown>
> = {
  senseFast: (services, input: { text: string }) => services.senseFast(input.text),
  screen: (services, input: Parameters<TurnServices["screen"]>[0]) => services.screen(input),
  safetyCouncil: (services, input: Parameters<TurnServices["safetyCouncil"]>[0], signal) =>
    services.safetyCouncil(input, signal),
  retrieveMemory: (services, input: Parameters<TurnServices["retrieveMemory"]>[0], signal) =>
    services.retrieveMemory(input, signal),
  planWaves: (services, input: Parameters<TurnServices["planWaves"]>[0], signal) => services.planWaves(input, signal),
  deliberate: (services, input: Parameters<TurnServices["deliberate"]>[0], signal) =>
    services.deliberate(input, signal),
  decide: (services, input: Parameters<TurnServices["decide"]>[0], signal) => services.decide(input, signal),
  runCritics: (services, input: Parameters<TurnServices["runCritics"]>[0], signal) =>
    services.runCritics(input, signal),
  commitMemory: (services, input: Parameters<TurnServices["commitMemory"]>[0], signal) =>
    services.commitMemory(input, signal),
};

/** The request a wave sends one of its agents (as `provideTurn`'s `runWave` builds it). */
const agentRequest = (wave: RunWaveInput, agent_id: string): AgentRequest => ({
  session_id: wave.session_id,
  turn_id: wave.turn_id,
  agent_id,
  wave: wave.wave,
  mode: "respond",
  round: 0,
  timeout_ms: wave.timeout_ms,
  context: wave.context,
});

type Part = VoiceStreamPart | InterceptedPart;
interface Rendering {
  parts: Part[];
  reply: VoiceReply;
}

/** A stream part as the voice sends it to the turn (`provideTurn`'s `renderVoice`). */
function partEvent(part: Part): AnyEventObject {
  if (part.type === "intercepted") return { ...part, type: "voice.intercepted" };
  if (part.type === "start") return { type: "voice.start", stream_id: part.stream_id, content_type: part.content_type };
  if (part.type === "chunk") return { type: "voice.chunk", stream_id: part.stream_id, delta: part.delta };
  return { type: "voice.end", stream_id: part.stream_id };
}

const topState = (snapshot: AnyMachineSnapshot): string =>
  typeof snapshot.value === "string" ? snapshot.value : Object.keys(snapshot.value)[0]!;

const inVoice = (snapshot: AnyMachineSnapshot): boolean =>
  snapshot.matches({ council: "speaking" }) || snapshot.matches({ critics: "revising" });

export function turnModel(scenario: TurnScenario, oracle: Oracle): Model & { topState: typeof topState } {
  const input = turnInput(scenario);
  const machine = provideTurn(realServices(scenario), () => {});
  /** Stream parts delivered so far in the rendering under way, per traversed state. */
  const position = new WeakMap<AnyMachineSnapshot, number>();
  const steeredIn = (snapshot: AnyMachineSnapshot) =>
    scenario.faults === "all" || scenario.faults.includes(topState(snapshot));

  const real = (service: string, serviceInput: unknown): Outcome | undefined =>
    oracle.lookup(service, serviceInput, () => {
      const services = realServices(scenario);
      const signal = new AbortController().signal;
      if (service === "renderVoice") {
        const parts: Part[] = [];
        return services
          .renderVoice(serviceInput as VoiceRequest, signal, (part) => parts.push(part))
          .then((reply): Rendering => ({ parts, reply }));
      }
      if (service === "callAgent") return services.callAgent(serviceInput as AgentRequest, signal);
      const call = PROMISE_SERVICES[service];
      if (!call) throw new Error(`no service ${service}`);
      return call(services, serviceInput as never, signal);
    });

  const compare = (snapshot: AnyMachineSnapshot): string => {
    const context = snapshot.context as TurnContext;
    return JSON.stringify([
      snapshot.value,
      snapshot.status,
      context.wave,
      context.wave_pending.length,
      context.round,
      context.attempt,
    ]);
  };

  const events = (snapshot: AnyMachineSnapshot): AnyEventObject[] => {
    if (snapshot.status !== "active") return [];
    const context = snapshot.context as TurnContext;
    // A wave whose agents have all answered sends `wave.done` at once: nothing else can come first.
    if (snapshot.matches({ agents: "wave" }) && context.wave_pending.length === 0) return [{ type: "wave.done" }];
    const pos = position.get(snapshot) ?? 0;
    const voice = inVoice(snapshot);
    // Faults are sampled everywhere in the stages the scenario names; in a rendering, before it starts and after its first part.
    const steered = steeredIn(snapshot) && (!voice || pos <= 1);
    const samples: AnyEventObject[] = [];
    const types = ownEvents(snapshot);
    for (const type of types) {
      if (type.startsWith(DONE_STATE)) continue; // raised by the machine itself when a compound state finishes
      if (type.startsWith(DONE_ACTOR)) {
        const id = type.slice(DONE_ACTOR.length);
        const outcome = real(invokeSrc(snapshot, id), childInput(snapshot, id));
        if (outcome?.ok) samples.push({ type, output: outcome.value });
      } else if (type.startsWith(ERROR_ACTOR)) {
        const id = type.slice(ERROR_ACTOR.length);
        const src = invokeSrc(snapshot, id);
        if (CALLBACKS.has(src)) {
          // A wave or a rendering fails this way only as it starts (the actor throws), before any answer.
          const starting = voice ? pos === 0 : context.wave_pending.length === context.waves[context.wave]?.length;
          if (steered && starting) samples.push({ type, error: new SteeredFault(src) });
          continue;
        }
        const outcome = real(src, childInput(snapshot, id));
        if (outcome && !outcome.ok) samples.push({ type, error: outcome.error });
        else if (steered) samples.push({ type, error: new SteeredFault(src) });
      } else if (type.startsWith(AFTER)) {
        if (steered) samples.push({ type });
      } else if (type === "turn.interrupt") {
        if (steered) samples.push({ type, by_turn_id: context.turn_id + 1 });
      } else if (type === "agent.replied") {
        // Agents are answered in wave order: the replay releases them in that order.
        const agent = context.wave_pending[0]!;
        const wave = childInput(snapshot, waveId(snapshot)) as RunWaveInput;
        const outcome = real("callAgent", agentRequest(wave, agent));
        if (outcome?.ok) samples.push({ type, reply: outcome.value });
      } else if (type === "agent.failed") {
        // One failing agent per wave is enough to take the edge: the first, before any answer.
        const agent = context.wave_pending[0]!;
        const first = context.wave_pending.length === (context.waves[context.wave]?.length ?? 0);
        if (steered && first) {
          samples.push({
            type,
            agent_id: agent,
            code: "agent_failed",
            message: new SteeredFault(`callAgent:${agent}`).message,
          });
        }
      } else if (type === "voice.done") {
        // The rendering's stream parts in the order the voice sends them, then its end.
        const outcome = real("renderVoice", childInput(snapshot, voiceId(snapshot)));
        if (!outcome?.ok) continue;
        const rendering = outcome.value as Rendering;
        if (pos < rendering.parts.length) samples.push(partEvent(rendering.parts[pos]!));
        else
          samples.push({
            type,
            text: rendering.reply.text,
            ...(rendering.reply.usage ? { usage: rendering.reply.usage } : {}),
          });
      } else if (type === "voice.failed") {
        if (steered) samples.push({ type, code: "agent_failed", message: new SteeredFault("renderVoice").message });
      } else if (!VOICE_PARTS.has(type) && type !== "wave.done") {
        // The stream parts are sampled with `voice.done`, `wave.done` when no agent is pending.
        throw new Error(`turn model: no sample for ${type}`);
      }
    }
    return samples;
  };

  return {
    machine,
    input,
    events,
    compare,
    topState,
    key: (snapshot) => `${compare(snapshot)}${inVoice(snapshot) ? `@${position.get(snapshot) ?? 0}` : ""}`,
    note: (snapshot, event, previous) => {
      if (position.has(snapshot)) return;
      const delivered = event && previous && VOICE_PARTS.has(event.type) ? (position.get(previous) ?? 0) + 1 : 0;
      position.set(snapshot, delivered);
    },
  };
}

const waveId = (snapshot: AnyMachineSnapshot): string => invokeIdOf(snapshot, "runWave");
const voiceId = (snapshot: AnyMachineSnapshot): string => invokeIdOf(snapshot, "renderVoice");
function invokeIdOf(snapshot: AnyMachineSnapshot, src: string): string {
  for (const node of activeNodes(snapshot)) {
    const invoke = node.invoke.find((candidate) => candidate.src === src);
    if (invoke) return invoke.id;
  }
  throw new Error(`no ${src} invoked in ${JSON.stringify(snapshot.value)}`);
}

// ---------------------------------------------------------------------------
// Replay

/** Where the voice's stream parts wait: the replay hands them to the turn one by one. */
class VoiceGate {
  private current:
    | {
        parts: Part[];
        delivered: number;
        ready: Promise<VoiceReply>;
        onStream: (part: Part) => void;
        resolve: (reply: VoiceReply) => void;
        reject: (error: unknown) => void;
      }
    | undefined;

  render(real: TurnServices, request: VoiceRequest, signal: AbortSignal, onStream: (part: Part) => void) {
    return new Promise<VoiceReply>((resolve, reject) => {
      const parts: Part[] = [];
      const ready = real.renderVoice(request, signal, (part) => parts.push(part));
      ready.catch(() => {}); // a failure surfaces where the replay awaits it
      const entry = {
        parts,
        delivered: 0,
        ready,
        onStream,
        resolve,
        reject,
      };
      this.current = entry;
      signal.addEventListener("abort", () => {
        if (this.current === entry) this.current = undefined;
        reject(new Error("renderVoice: aborted"));
      });
    });
  }

  async deliver(): Promise<Part> {
    const entry = this.current;
    if (!entry) throw new Error("no rendering under way");
    await entry.ready;
    const part = entry.parts[entry.delivered++];
    if (!part) throw new Error("the rendering has no more parts");
    entry.onStream(part);
    return part;
  }

  async finish(mode: "real" | "fail"): Promise<void> {
    const entry = this.current;
    if (!entry) throw new Error("no rendering under way");
    this.current = undefined;
    if (mode === "fail") return entry.reject(new SteeredFault("renderVoice"));
    const reply = await entry.ready;
    if (entry.delivered !== entry.parts.length) throw new Error("the rendering ends before all its parts were sent");
    entry.resolve(reply);
  }
}

/** The real services behind gates, with the faults this path injects at invocation time. */
function gatedServices(
  real: TurnServices,
  gates: Gates,
  voice: VoiceGate,
  crash: { waves: Set<number>; attempts: Set<number> },
): TurnServices {
  return {
    senseFast: (text) => gates.hold("senseFast", text, () => real.senseFast(text)),
    screen: (request) => gates.hold("screen", request, () => real.screen(request)),
    safetyCouncil: (request, signal) =>
      gates.hold("safetyCouncil", request, () => real.safetyCouncil(request, signal), signal),
    retrieveMemory: (request, signal) =>
      gates.hold("retrieveMemory", request, () => real.retrieveMemory(request, signal), signal),
    planWaves: (request, signal) => gates.hold("planWaves", request, () => real.planWaves(request, signal), signal),
    deliberate: (request, signal) => gates.hold("deliberate", request, () => real.deliberate(request, signal), signal),
    decide: (request, signal) => gates.hold("decide", request, () => real.decide(request, signal), signal),
    runCritics: (request, signal) => gates.hold("runCritics", request, () => real.runCritics(request, signal), signal),
    commitMemory: (request, signal) =>
      gates.hold("commitMemory", request, () => real.commitMemory(request, signal), signal),
    callAgent: (request, signal, attempts) => {
      // A wave whose invocation itself fails (the `runWave` actor throws as it starts).
      if (crash.waves.has(request.wave)) throw new SteeredFault(`runWave (wave ${request.wave})`);
      return gates.hold(
        `callAgent:${request.agent_id}`,
        request,
        () => real.callAgent(request, signal, attempts),
        signal,
      );
    },
    renderVoice: (request, signal, onStream) => {
      if (crash.attempts.has(request.attempt)) throw new SteeredFault(`renderVoice (attempt ${request.attempt})`);
      return voice.render(real, request, signal, onStream);
    },
  };
}

/** One record as a token of the spec: its kind, with the stage for stage changes and warnings. */
const token = (record: TurnRecord): string =>
  record.kind === "TURN_STAGE_CHANGED"
    ? `stage:${record.payload.stage}`
    : record.kind === "STAGE_WARNING"
      ? `warn:${record.payload.stage}`
      : record.kind;

/** What entering a state records (README, "Reading a turn's events"). */
const ENTRY: Record<string, string> = {
  "turn.ingest": "TURN_STARTED stage:ingest ",
  "turn.sensing_fast": "stage:sensing_fast ",
  "turn.safety": "SAFETY_INTERRUPT ",
  "turn.context": "stage:context ",
  "turn.agents": "stage:agents ",
  "turn.agents.wave": "WAVE_STARTED ",
  "turn.deliberation": "stage:deliberation ",
  "turn.deliberation.round": "DELIB_ROUND_STARTED ",
  "turn.council": "stage:council ",
  "turn.critics": "stage:critics ",
  "turn.memory_commit": "stage:memory_commit ",
  "turn.completed": "TURN_COMPLETED ",
};

const opt = (tokens: string) => `(?:${tokens})?`;
const many = (tokens: string) => `(?:${tokens})*`;
const times = (tokens: string, n: number) => tokens.repeat(n);
const CLOSE_WAVE = `WORKSPACE_PATCHED ${opt("STANCE_UPDATED ")}WAVE_COMPLETED `;
const abandonedWave = (before: TurnContext) =>
  before.wave_open ? `${times("AGENT_FAILED ", before.wave_pending.length)}${CLOSE_WAVE}` : "";
const openStreamEnds = (before: TurnContext) => times("STREAM_END ", before.open_streams.length);
const cutShort = (before: TurnContext) => `${abandonedWave(before)}${openStreamEnds(before)}`;
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
 * given the context before it (README: a stage that fails or misses its deadline adds
 * a STAGE_WARNING tagged with the stage; per wave WAVE_STARTED … WAVE_COMPLETED; …).
 * `$stage` is the stage the turn is in (its last TURN_STAGE_CHANGED).
 */
export const TRANSITION_RECORDS: Record<string, string | ((before: TurnContext) => string)> = {
  // Leaving mid-wave or mid-stream still closes them: every agent pending fails, the wave gets its
  // WAVE_COMPLETED, every open stream its STREAM_END.
  "turn → turn.completed : turn.interrupt": (before) => `${cutShort(before)}warn:$stage `,
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
  "turn.agents → turn.deliberation : after stageTimeout": (before) => `${abandonedWave(before)}warn:agents `,
  "turn.agents.planning → turn.agents.planned : planWaves done": "SCHEDULE_PLANNED ",
  "turn.agents.planning → turn.agents.done : planWaves error": "warn:agents ",
  "turn.agents.planned → turn.agents.wave : always [hasWaves]": "",
  "turn.agents.planned → turn.agents.done : always": "",
  "turn.agents.wave → turn.agents.wave : agent.replied": "AGENT_COMPLETED ",
  "turn.agents.wave → turn.agents.wave : agent.failed": "AGENT_FAILED warn:agents ",
  "turn.agents.wave → turn.agents.wave : wave.done [hasMoreWaves]": CLOSE_WAVE,
  "turn.agents.wave → turn.agents.done : wave.done": CLOSE_WAVE,
  "turn.agents.wave → turn.agents.done : runWave error": `warn:agents ${CLOSE_WAVE}`,
  // Every agent still pending when the wave's deadline passes is a timeout.
  "turn.agents.wave → turn.agents.wave : after waveTimeout [hasMoreWaves]": (before) =>
    `${times("AGENT_FAILED warn:agents ", before.wave_pending.length)}${CLOSE_WAVE}`,
  "turn.agents.wave → turn.agents.done : after waveTimeout": (before) =>
    `${times("AGENT_FAILED warn:agents ", before.wave_pending.length)}${CLOSE_WAVE}`,
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
class RecordChecker {
  private stage = "ingest";
  private waves = 0;
  private readonly chunks = new Map<string, number>();
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
    for (const record of records) {
      const problem = this.payload(record);
      if (problem) return problem;
      this.records.push(record);
    }
    this.last = step.snapshot;
    return undefined;
  }

  /** Payload rules any log reader relies on. */
  private payload(record: TurnRecord): string | undefined {
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
        return undefined;
      }
      case "TURN_COMPLETED": {
        const warned = this.records.some((earlier) => earlier.kind === "STAGE_WARNING");
        const rendered = this.records.filter((earlier) => earlier.kind === "VOICE_RENDERED").at(-1);
        const text = rendered?.kind === "VOICE_RENDERED" ? rendered.payload.text : "";
        if (record.payload.outcome.status !== (warned ? "PartialSuccess" : "Complete"))
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

/** Replays one path of the turn against a live turn actor with the real services; returns what went wrong, if anything. */
export function replayTurn(
  scenario: TurnScenario,
  model: Model,
  path: Path,
  coverage: Coverage,
  edgeKeys: (transition: AnyTransitionDefinition) => string[],
): Promise<string | undefined> {
  return replayPath(model, path, coverage, () => {
    const clock = new ManualClock();
    const gates = new Gates();
    const voice = new VoiceGate();
    const recorder = new Recorder();
    // Faults a path injects as an actor starts are decided before the run.
    const crash = { waves: new Set<number>(), attempts: new Set<number>() };
    path.steps.forEach((step, index) => {
      if (!step.event.type.startsWith(ERROR_ACTOR) || index === 0) return;
      const before = path.steps[index - 1]!.state;
      const src = invokeSrc(before, step.event.type.slice(ERROR_ACTOR.length));
      const context = before.context as TurnContext;
      if (src === "runWave") crash.waves.add(context.wave);
      if (src === "renderVoice") crash.attempts.add(context.attempt);
    });
    const machine = provideTurn(gatedServices(realServices(scenario), gates, voice, crash), (_context, record) =>
      recorder.emit(record),
    );
    const actor = createActor(machine, { input: model.input as TurnInput, clock, inspect: recorder.inspect });
    clock.attach(actor.system);
    const checker = new RecordChecker(
      edgeKeys,
      initialConfiguration(model.machine).map((node) => node.id),
    );
    return {
      actor,
      recorder,
      drive: (event, before) => drive(event, before, { actor, clock, gates, voice }),
      sameEvent,
      check: (step) => checker.check(step),
      finish: () => {
        const completed = checker.records.filter((record) => record.kind === "TURN_COMPLETED");
        if (path.state.status !== "done") {
          return completed.length > 0 ? "TURN_COMPLETED recorded before the turn ended" : undefined;
        }
        const output = actor.getSnapshot().output as TurnOutput | undefined;
        const last = checker.records.at(-1);
        if (completed.length !== 1 || last?.kind !== "TURN_COMPLETED")
          return "TURN_COMPLETED is not the one last record";
        if (!output || output.response !== last.payload.response)
          return `the turn's output ${JSON.stringify(output?.response)} differs from TURN_COMPLETED's response`;
        if (JSON.stringify(output.outcome) !== JSON.stringify(last.payload.outcome))
          return "the turn's outcome differs from TURN_COMPLETED's";
        return undefined;
      },
    };
  });
}

/** Events the replay compares field by field beyond their type. */
function sameEvent(expected: AnyEventObject, actual: AnyEventObject): string | undefined {
  const pick = (event: AnyEventObject): unknown => {
    switch (event.type) {
      case "agent.replied":
        return (event.reply as { agent_id: string }).agent_id;
      case "agent.failed":
        return [event.agent_id, event.code];
      case "voice.start":
      case "voice.end":
        return event.stream_id;
      case "voice.chunk":
        return [event.stream_id, event.delta];
      case "voice.intercepted":
        return [event.stream_id, event.interceptor, event.action];
      case "voice.done":
        return event.text;
      case "voice.failed":
        return event.code;
      case "turn.interrupt":
        return event.by_turn_id;
      default:
        if (event.type.startsWith(DONE_ACTOR)) return JSON.stringify(event.output);
        return undefined;
    }
  };
  const [want, got] = [JSON.stringify(pick(expected)), JSON.stringify(pick(actual))];
  return want === got ? undefined : `the actor got ${got}, the path has ${want}`;
}

/** Makes the live actor take the path's next event: a gate opens, a timer fires, or the event is sent. */
async function drive(
  event: AnyEventObject,
  before: AnyMachineSnapshot,
  live: { actor: { send(event: AnyEventObject): void }; clock: ManualClock; gates: Gates; voice: VoiceGate },
): Promise<string | undefined> {
  const { type } = event;
  const release = async (channel: string, mode: "real" | "fail") =>
    (await live.gates.release(channel, mode))
      ? undefined
      : `no pending call on ${channel} (pending: ${live.gates.pendingChannels().join(", ") || "none"})`;
  if (type.startsWith(DONE_ACTOR)) return release(invokeSrc(before, type.slice(DONE_ACTOR.length)), "real");
  if (type.startsWith(ERROR_ACTOR)) {
    const src = invokeSrc(before, type.slice(ERROR_ACTOR.length));
    if (CALLBACKS.has(src)) return undefined; // it threw as it started: the error is on its way
    return release(src, event.error instanceof SteeredFault ? "fail" : "real");
  }
  if (type.startsWith(AFTER)) {
    return live.clock.fire(type) ? undefined : `no timer for ${type} (pending: ${live.clock.pending().join(", ")})`;
  }
  switch (type) {
    case "agent.replied":
      return release(`callAgent:${(event.reply as { agent_id: string }).agent_id}`, "real");
    case "agent.failed":
      return release(`callAgent:${event.agent_id}`, "fail");
    case "voice.start":
    case "voice.chunk":
    case "voice.end":
    case "voice.intercepted":
      await live.voice.deliver();
      return undefined;
    case "voice.done":
      await live.voice.finish("real");
      return undefined;
    case "voice.failed":
      await live.voice.finish("fail");
      return undefined;
    case "wave.done":
      return undefined; // the wave sends it itself once every agent has answered
    default:
      live.actor.send(event);
      return undefined;
  }
}
