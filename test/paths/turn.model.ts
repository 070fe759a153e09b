import type { AnyEventObject, AnyMachineSnapshot } from "xstate";
import { AGENTS } from "../../agents/index.ts";
import { defaultTurnPolicy, type TurnContext, type TurnInput } from "../../machines/turn/index.ts";
import type { AgentDefinition } from "../../src/agents/defineAgent.ts";
import { planWaves } from "../../src/cognition/scheduler.ts";
import { SEED_SENSORS } from "../../src/cognition/sensors.ts";
import type { InterceptedPart, VoiceStreamPart } from "../../src/cognition/voice.ts";
import type { AgentRequest, AgentStreamEvent } from "../../src/contracts/agent.ts";
import type { VoiceReply, VoiceRequest } from "../../src/contracts/council.ts";
import type { RunWaveInput, TurnPolicy } from "../../src/contracts/turnProtocol.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { screeningInterceptor } from "../../src/runtime/interception/intercepted.ts";
import {
  defaultInterceptors,
  type InterceptorChains,
  type ResponseInterceptor,
} from "../../src/runtime/interception/interceptors.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";
import { provideTurn } from "../../src/runtime/turnServices/provideTurn.ts";
import { composeTurnServices } from "../../src/runtime/turnServices/turnInterceptor.ts";
import type { TurnServices } from "../../src/runtime/turnServices/turnServices.ts";
import {
  AFTER,
  activeNodes,
  childInput,
  DONE_ACTOR,
  DONE_STATE,
  ERROR_ACTOR,
  invokeSrc,
  type Model,
  type Oracle,
  type Outcome,
  ownEvents,
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
export const AGENT_STREAM_PARTS = new Set([
  "agent.stream.start",
  "agent.stream.chunk",
  "agent.stream.end",
  "agent.stream.intercepted",
]);
export const CALLBACKS = new Set(["runWave", "renderVoice"]);

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
  /** The turn was cancelled before it started, with this reason. */
  cancelled?: string;
  /** Top-level states where steered events (faults, deadlines, interrupts) are sampled. */
  faults: "all" | readonly string[];
  /** Top-level states whose simple paths are enumerated (joined to the shortest path into the state). */
  simple?: readonly string[];
}

/**
 * What an agent jots on its named stream `notes` when it takes notes: the user's address, which the
 * response chain redacts as the stream goes by (the runner's `pii` interceptor holds it back until it
 * is whole), so the stream shows STREAM_START, RESPONSE_INTERCEPTED, STREAM_CHUNK "[email]", STREAM_END.
 * (Any text around it adds a chunk, and the turn's agents stage about twice as many simple paths.)
 */
export const AGENT_NOTE = "ana@example.com";
export const NOTES_STREAM = "notes";

/** An agent that streams {@link AGENT_NOTE} on `notes` before it answers as it always does. */
const takingNotes = (agent: AgentDefinition): AgentDefinition => ({
  ...agent,
  run: (ctx) => {
    ctx.stream(NOTES_STREAM, AGENT_NOTE);
    return agent.run(ctx);
  },
});

/**
 * The real services of a scenario: a fresh instance, as a runner gives each turn. With `notes`,
 * every agent takes notes (the built-in agents do not stream: a stream is something a path steers).
 */
export function realServices(scenario: TurnScenario, options: { notes?: boolean } = {}): TurnServices {
  const agents = [...AGENTS.values()];
  const services = composeTurnServices(
    localTurnServices(() => NOW, SEED_SENSORS, options.notes ? agents.map(takingNotes) : agents),
    [screeningInterceptor((scenario.chains ?? defaultInterceptors)())],
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
  ...(scenario.cancelled !== undefined ? { cancelled: scenario.cancelled } : {}),
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

export type Part = VoiceStreamPart | InterceptedPart;
interface Rendering {
  parts: Part[];
  reply: VoiceReply;
}

/** An agent's stream part (as the response chain released it) as a wave sends it to the turn (`provideTurn`'s `runWave`). */
export function agentPartEvent(part: AgentStreamEvent): AnyEventObject {
  const stream_id = `${part.agent_id}:${part.stream}`;
  if (part.type === "intercepted") {
    const { interceptor, action, reason } = part;
    return { type: "agent.stream.intercepted", stream_id, interceptor, action, reason };
  }
  if (part.type === "start")
    return { type: "agent.stream.start", stream_id, content_type: part.content_type ?? "text/plain" };
  if (part.type === "chunk") return { type: "agent.stream.chunk", stream_id, delta: part.delta ?? "" };
  return { type: "agent.stream.end", stream_id };
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
  /** Stream parts the wave's first pending agent has delivered so far, per traversed state. */
  const streamed = new WeakMap<AnyMachineSnapshot, number>();
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
      if (service === "agentNotes") {
        // The stream parts of an agent taking notes, as the scenario's response chain releases them.
        const parts: AgentStreamEvent[] = [];
        return realServices(scenario, { notes: true })
          .callAgent(serviceInput as AgentRequest, signal, { onStream: (part) => parts.push(part) })
          .then(() => parts);
      }
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
      } else if (type === "turn.cancel") {
        if (steered) samples.push({ type, reason: "steered cancel" });
      } else if (AGENT_STREAM_PARTS.has(type)) {
        // The wave's first agent still pending takes notes: its stream parts in the order runAgent sends them and
        // the response chain releases them (the built-in agents do not stream, so these are steered, in the first
        // wave only). The next part is sampled once, with the type of its event.
        const agent = context.wave_pending[0];
        if (!steered || !agent || context.wave !== 0) continue;
        const wave = childInput(snapshot, waveId(snapshot)) as RunWaveInput;
        const outcome = real("agentNotes", agentRequest(wave, agent));
        if (!outcome?.ok) continue;
        const part = (outcome.value as AgentStreamEvent[])[streamed.get(snapshot) ?? 0];
        const event = part && agentPartEvent(part);
        if (event?.type === type) samples.push(event);
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
      } else if (type === "agent.approval_required") {
        // A tool call of the wave's first agent waits for approval (steered: the built-in agents call no tools).
        const agent = context.wave_pending[0]!;
        const first = context.wave_pending.length === (context.waves[context.wave]?.length ?? 0);
        if (steered && first) {
          samples.push({
            type,
            agent_id: agent,
            approval: { call_id: `${agent}.w${context.wave}/0`, tool: "sandbox_write", args: {}, reason: "steered" },
            prompt: "Approve sandbox_write({})? steered",
            required_role: "operator",
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
    key: (snapshot) =>
      `${compare(snapshot)}${inVoice(snapshot) ? `@${position.get(snapshot) ?? 0}` : ""}${streamed.get(snapshot) ? `~${streamed.get(snapshot)}` : ""}`,
    note: (snapshot, event, previous) => {
      if (position.has(snapshot)) return;
      const delivered = event && previous && VOICE_PARTS.has(event.type) ? (position.get(previous) ?? 0) + 1 : 0;
      position.set(snapshot, delivered);
      // Any other event of a wave (an answer, a failure) leaves the first pending agent's stream behind, or the wave.
      const parts = event && previous && AGENT_STREAM_PARTS.has(event.type) ? (streamed.get(previous) ?? 0) + 1 : 0;
      streamed.set(snapshot, parts);
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
