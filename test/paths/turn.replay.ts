import { type AnyEventObject, type AnyMachineSnapshot, type AnyTransitionDefinition, createActor } from "xstate";
import type { TurnContext, TurnInput } from "../../machines/turn/index.ts";
import type { AgentReply, AgentStreamEvent } from "../../src/contracts/agent.ts";
import type { VoiceReply, VoiceRequest } from "../../src/contracts/council.ts";
import type { TurnOutput } from "../../src/contracts/turnProtocol.ts";
import { provideTurn } from "../../src/runtime/turnServices/provideTurn.ts";
import type { TurnServices } from "../../src/runtime/turnServices/turnServices.ts";
import {
  AFTER,
  type Coverage,
  DONE_ACTOR,
  ERROR_ACTOR,
  Gates,
  initialConfiguration,
  invokeSrc,
  ManualClock,
  type Model,
  type Path,
  Recorder,
  replayPath,
  SteeredFault,
} from "./harness.ts";
import {
  AGENT_STREAM_PARTS,
  CALLBACKS,
  NOTES_STREAM,
  type Part,
  realServices,
  type TurnScenario,
} from "./turn.model.ts";
import { RecordChecker } from "./turn.records.ts";

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

/**
 * Where the stream parts of the agents taking notes wait: each such agent is called at once (the real
 * agent, through the scenario's response chain, as `screeningInterceptor` screens it), and the replay hands
 * the parts it released to the wave one by one; its answer waits at its gate like any agent's.
 */
class AgentStreamGate {
  private readonly calls = new Map<
    string,
    {
      parts: AgentStreamEvent[];
      delivered: number;
      ready: Promise<AgentReply>;
      onStream: (part: AgentStreamEvent) => void;
    }
  >();

  call(
    noting: TurnServices,
    request: Parameters<TurnServices["callAgent"]>[0],
    signal: AbortSignal,
    attempts: number | undefined,
    onStream: (part: AgentStreamEvent) => void,
  ): Promise<AgentReply> {
    const parts: AgentStreamEvent[] = [];
    const ready = noting.callAgent(request, signal, { attempts, onStream: (part) => parts.push(part) });
    ready.catch(() => {}); // a failure surfaces where the gate releases it
    this.calls.set(`${request.agent_id}:${NOTES_STREAM}`, { parts, delivered: 0, ready, onStream });
    return ready;
  }

  /** Hands the wave the next part of this stream; a problem, if any. */
  async deliver(streamId: string): Promise<string | undefined> {
    const entry = this.calls.get(streamId);
    if (!entry) return `no agent is streaming ${streamId}`;
    await entry.ready.catch(() => {});
    const part = entry.parts[entry.delivered++];
    if (!part) return `${streamId} has no more parts`;
    entry.onStream(part);
    return undefined;
  }
}

/** The real services behind gates, with the faults this path injects at invocation time. */
function gatedServices(
  real: TurnServices,
  gates: Gates,
  voice: VoiceGate,
  crash: { waves: Set<number>; attempts: Set<number> },
  notes: { noting: TurnServices; agents: Set<string>; gate: AgentStreamGate },
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
    callAgent: (request, signal, options = {}) => {
      const { attempts, onStream } = options;
      // A wave whose invocation itself fails (the `runWave` actor throws as it starts).
      if (crash.waves.has(request.wave)) throw new SteeredFault(`runWave (wave ${request.wave})`);
      // An agent whose stream this path delivers takes notes; its answer waits at its gate all the same.
      if (onStream && request.wave === 0 && notes.agents.has(request.agent_id)) {
        const ready = notes.gate.call(notes.noting, request, signal, attempts, onStream);
        return gates.hold(`callAgent:${request.agent_id}`, request, () => ready, signal);
      }
      return gates.hold(
        `callAgent:${request.agent_id}`,
        request,
        () => real.callAgent(request, signal, { attempts }),
        signal,
      );
    },
    renderVoice: (request, signal, onStream) => {
      if (crash.attempts.has(request.attempt)) throw new SteeredFault(`renderVoice (attempt ${request.attempt})`);
      return voice.render(real, request, signal, onStream);
    },
  };
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
    // So are the agents that take notes: those whose stream parts the path delivers.
    const notes = {
      noting: realServices(scenario, { notes: true }),
      agents: new Set<string>(),
      gate: new AgentStreamGate(),
    };
    for (const step of path.steps) {
      if (AGENT_STREAM_PARTS.has(step.event.type))
        notes.agents.add((step.event.stream_id as string).slice(0, -`:${NOTES_STREAM}`.length));
    }
    path.steps.forEach((step, index) => {
      if (!step.event.type.startsWith(ERROR_ACTOR) || index === 0) return;
      const before = path.steps[index - 1]!.state;
      const src = invokeSrc(before, step.event.type.slice(ERROR_ACTOR.length));
      const context = before.context as TurnContext;
      if (src === "runWave") crash.waves.add(context.wave);
      if (src === "renderVoice") crash.attempts.add(context.attempt);
    });
    const machine = provideTurn(gatedServices(realServices(scenario), gates, voice, crash, notes), (_context, record) =>
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
      drive: (event, before) => drive(event, before, { actor, clock, gates, voice, streams: notes.gate }),
      sameEvent,
      check: (step) => checker.check(step),
      finish: () => {
        const completed = checker.records.filter((record) => record.kind === "TURN_COMPLETED");
        if (path.state.status !== "done") {
          return completed.length > 0 ? "TURN_COMPLETED recorded before the turn ended" : undefined;
        }
        const output = actor.getSnapshot().output as TurnOutput | undefined;
        const last = checker.records.at(-1);
        if (output?.suspended) {
          if (completed.length > 0 || last?.kind !== "TURN_SUSPENDED")
            return "a suspended turn's last record is not TURN_SUSPENDED (or it recorded TURN_COMPLETED)";
          return undefined;
        }
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
      case "turn.cancel":
        return event.reason;
      case "agent.stream.start":
      case "agent.stream.end":
        return event.stream_id;
      case "agent.stream.chunk":
        return [event.stream_id, event.delta];
      case "agent.stream.intercepted":
        return [event.stream_id, event.interceptor, event.action, event.reason];
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
  live: {
    actor: { send(event: AnyEventObject): void };
    clock: ManualClock;
    gates: Gates;
    voice: VoiceGate;
    streams: AgentStreamGate;
  },
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
    case "agent.stream.start":
    case "agent.stream.chunk":
    case "agent.stream.end":
    case "agent.stream.intercepted":
      return live.streams.deliver(event.stream_id as string);
    case "wave.done":
      return undefined; // the wave sends it itself once every agent has answered
    default:
      live.actor.send(event);
      return undefined;
  }
}
