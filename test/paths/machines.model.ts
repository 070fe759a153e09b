import { type AnyEventObject, type AnyMachineSnapshot, createActor, fromPromise } from "xstate";
import { AGENTS } from "../../agents/index.ts";
import { type AgentMachineOutput, agentMachine } from "../../machines/agent.ts";
import { type CouncilOutput, councilMachine } from "../../machines/council.ts";
import { type CriticInput, type CriticOutput, criticMachine } from "../../machines/critic.ts";
import { type SchedulerInput, type SchedulerOutput, schedulerMachine } from "../../machines/scheduler.ts";
import { runAgent } from "../../src/agents/runAgent.ts";
import { offlineBackend } from "../../src/cognition/backend.ts";
import type { Cooldowns } from "../../src/cognition/scheduler.ts";
import { runFastSensors } from "../../src/cognition/sensors.ts";
import type { AgentAnswer, AgentRequest } from "../../src/contracts/agent.ts";
import type { CouncilReply, CouncilRequest } from "../../src/contracts/council.ts";
import type { CriticReply, CriticRequest } from "../../src/contracts/critic.ts";
import type { PlanWavesRequest } from "../../src/contracts/scheduler.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import type { CooldownStore } from "../../src/runtime/cooldownStore.ts";
import {
  AFTER,
  childInput,
  DONE_ACTOR,
  ERROR_ACTOR,
  Gates,
  invokeSrc,
  type Live,
  ManualClock,
  type Model,
  type Oracle,
  ownEvents,
  type Path,
  Recorder,
  SteeredFault,
} from "./harness.ts";

/**
 * The worker-side machines (agent, council, critic, scheduler) and the session,
 * each under model-based test the same way as the turn: the real machine, provided
 * with the real implementations the workers give it (the offline backend, the
 * cooldown store), its event samples what those really return, and steered faults.
 */

export const NOW = 1_700_000_000_000;
const signal = () => new AbortController().signal;

/** The common model of a machine whose only events are its invoked actors' and a few external ones. */
function smallModel(
  machine: Model["machine"],
  input: unknown,
  oracle: Oracle,
  real: Record<string, (input: never) => Promise<unknown>>,
  external: Record<string, AnyEventObject[]> = {},
): Model {
  return {
    machine,
    input,
    key: (snapshot) => JSON.stringify([snapshot.value, snapshot.status]),
    events: (snapshot) => {
      if (snapshot.status !== "active") return [];
      const samples: AnyEventObject[] = [];
      for (const type of ownEvents(snapshot)) {
        if (type.startsWith(DONE_ACTOR) || type.startsWith(ERROR_ACTOR)) {
          const id = type.slice(type.startsWith(DONE_ACTOR) ? DONE_ACTOR.length : ERROR_ACTOR.length);
          const src = invokeSrc(snapshot, id);
          const call = real[src];
          if (!call) throw new Error(`no real ${src}`);
          const serviceInput = childInput(snapshot, id);
          const outcome = oracle.lookup(src, serviceInput, () => call(serviceInput as never));
          if (!outcome) continue;
          if (type.startsWith(DONE_ACTOR)) {
            if (outcome.ok) samples.push({ type, output: outcome.value });
          } else {
            // The real failure when there is one, else a steered one.
            samples.push({ type, error: outcome.ok ? new SteeredFault(src) : outcome.error });
          }
        } else if (type.startsWith(AFTER)) {
          samples.push({ type });
        } else {
          const sampled = external[type];
          if (!sampled) throw new Error(`no sample for ${type}`);
          samples.push(...sampled);
        }
      }
      return samples;
    },
  };
}

/** Drives the invoked actors of a small machine through gates, its delays through the clock. */
function smallDrive(live: { actor: { send(event: AnyEventObject): void }; gates: Gates; clock: ManualClock }) {
  return async (event: AnyEventObject, before: AnyMachineSnapshot): Promise<string | undefined> => {
    const { type } = event;
    if (type.startsWith(DONE_ACTOR) || type.startsWith(ERROR_ACTOR)) {
      const done = type.startsWith(DONE_ACTOR);
      const src = invokeSrc(before, type.slice(done ? DONE_ACTOR.length : ERROR_ACTOR.length));
      const mode = done || !(event.error instanceof SteeredFault) ? "real" : "fail";
      return (await live.gates.release(src, mode)) ? undefined : `no pending call on ${src}`;
    }
    if (type.startsWith(AFTER)) return live.clock.fire(type) ? undefined : `no timer for ${type}`;
    live.actor.send(event);
    return undefined;
  };
}

/** What a finished machine's output must be, from how its path ended. */
const outputCheck = (actual: unknown, expected: unknown): string | undefined =>
  JSON.stringify(actual) === JSON.stringify(expected)
    ? undefined
    : `output ${JSON.stringify(actual)?.slice(0, 300)}, expected ${JSON.stringify(expected)?.slice(0, 300)}`;

/** The event that ended a path. */
const lastEvent = (path: Path): AnyEventObject => path.steps.at(-1)!.event;

export interface MachineUnderTest {
  name: string;
  model: Model;
  start(path: Path): Live;
}

// ---------------------------------------------------------------------------
// agent

export function agentUnderTest(oracle: Oracle): MachineUnderTest {
  const request: AgentRequest = {
    session_id: "paths",
    turn_id: 1,
    agent_id: "emotion.stress",
    wave: 1,
    mode: "respond",
    round: 0,
    timeout_ms: 4_000,
    context: {
      user_message: "I'm stressed about my deadline",
      sensors: runFastSensors("I'm stressed about my deadline"),
      modulators: neutralModulators(),
      stance: neutralStance(),
      claims: [],
      episodes: [],
    },
  };
  /** The worker's `think` (src/workers/agentEndpoints.ts): the agent run as a worker runs it, offline. */
  const think = async (input: AgentRequest, abort: AbortSignal): Promise<AgentAnswer> => {
    const agent = AGENTS.get(input.agent_id);
    if (!agent) throw new Error(`no agent ${input.agent_id}`);
    return runAgent(agent, input, { signal: abort });
  };
  const model = smallModel(
    agentMachine.provide({ actors: { think: fromPromise(({ input, signal }) => think(input, signal)) } }),
    request,
    oracle,
    { think: (input: AgentRequest) => think(input, signal()) },
    { start: [{ type: "start" }], cancel: [{ type: "cancel" }] },
  );
  return {
    name: "agent",
    model,
    start: (path) => {
      const gates = new Gates();
      const clock = new ManualClock();
      const recorder = new Recorder();
      const machine = agentMachine.provide({
        actors: {
          think: fromPromise(({ input, signal }) => gates.hold("think", input, () => think(input, signal), signal)),
        },
      });
      const actor = createActor(machine, { input: request, clock, inspect: recorder.inspect });
      clock.attach(actor.system);
      return {
        actor,
        recorder,
        drive: smallDrive({ actor, gates, clock }),
        check: (step) => {
          // While it thinks, one request is pending; once it has finished, none (a deadline or a cancel aborts it).
          const thinking = step.snapshot.matches("thinking");
          if (thinking !== gates.pendingChannels().includes("think"))
            return `think pending: ${gates.pendingChannels().join(", ") || "none"} in ${JSON.stringify(step.snapshot.value)}`;
          return undefined;
        },
        finish: () => {
          const output = actor.getSnapshot().output as AgentMachineOutput | undefined;
          if (path.state.status !== "done") return output === undefined ? undefined : "output before the end";
          const end = lastEvent(path);
          const from = path.steps.at(-2)!.state;
          const failed = (error?: AgentMachineOutput["error"]): AgentMachineOutput => ({
            agent_id: request.agent_id,
            status: "failed",
            ...(error ? { error } : {}),
          });
          let expected: AgentMachineOutput;
          if (end.type.startsWith(DONE_ACTOR))
            expected = { agent_id: request.agent_id, status: "replied", answer: end.output as AgentAnswer };
          else if (end.type.startsWith(AFTER))
            expected = failed({
              code: "timeout",
              message: `agent ${request.agent_id} did not finish within ${request.timeout_ms} ms`,
            });
          else if (end.type === "cancel")
            // Cancelled before it started, it fails with nothing to say; while thinking, as cancelled.
            expected = from.matches("idle") ? failed() : failed({ code: "agent_failed", message: "cancelled" });
          else expected = failed({ code: "agent_failed", message: (end.error as Error).message });
          return outputCheck(output, expected);
        },
      };
    },
  };
}

// ---------------------------------------------------------------------------
// council

export function councilUnderTest(oracle: Oracle): MachineUnderTest {
  const text = "I'm stuck on a bug, can you help?";
  const request: CouncilRequest = {
    session_id: "paths",
    turn_id: 1,
    context: {
      user_message: text,
      sensors: runFastSensors(text),
      modulators: neutralModulators(),
      stance: neutralStance(),
      claims: [],
      episodes: [],
      consensus: 1,
      proposals: [{ source: "reasoning.analyst", kind: "say", text: "What changed right before it broke?" }],
    },
  };
  const decide = (input: CouncilRequest, abort: AbortSignal): Promise<CouncilReply> =>
    offlineBackend.decide(input, abort);
  const model = smallModel(
    councilMachine.provide({ actors: { decide: fromPromise(({ input, signal }) => decide(input, signal)) } }),
    request,
    oracle,
    { decide: (input: CouncilRequest) => decide(input, signal()) },
  );
  return {
    name: "council",
    model,
    start: (path) => {
      const gates = new Gates();
      const clock = new ManualClock();
      const recorder = new Recorder();
      const machine = councilMachine.provide({
        actors: {
          decide: fromPromise(({ input, signal }) => gates.hold("decide", input, () => decide(input, signal), signal)),
        },
      });
      const actor = createActor(machine, { input: request, clock, inspect: recorder.inspect });
      clock.attach(actor.system);
      return {
        actor,
        recorder,
        drive: smallDrive({ actor, gates, clock }),
        finish: () => {
          const end = lastEvent(path);
          const output = actor.getSnapshot().output as CouncilOutput | undefined;
          if (path.state.status !== "done") return output === undefined ? undefined : "output before the end";
          const expected: CouncilOutput = end.type.startsWith(DONE_ACTOR)
            ? { status: "decided", reply: end.output as CouncilReply }
            : { status: "failed", error: String(end.error) };
          return outputCheck(output, expected);
        },
      };
    },
  };
}

// ---------------------------------------------------------------------------
// critic

export function criticUnderTest(oracle: Oracle, critic: string): MachineUnderTest {
  const request: CriticRequest = {
    session_id: "paths",
    turn_id: 1,
    user_message: "Do you ever feel lonely?",
    response: "That's a thoughtful question. I feel the same way sometimes.",
    speech_act: { intent: "reflect", key_points: [], do_not: ["claim to have feelings"] },
    attempt: 1,
  };
  const judge = (input: CriticInput, abort: AbortSignal): Promise<CriticReply> =>
    offlineBackend.judge(input.critic, input.request, abort);
  const model = smallModel(
    criticMachine.provide({ actors: { judge: fromPromise(({ input, signal }) => judge(input, signal)) } }),
    { critic, request },
    oracle,
    { judge: (input: CriticInput) => judge(input, signal()) },
  );
  return {
    name: "critic",
    model,
    start: (path) => {
      const gates = new Gates();
      const clock = new ManualClock();
      const recorder = new Recorder();
      const machine = criticMachine.provide({
        actors: {
          judge: fromPromise(({ input, signal }) => gates.hold("judge", input, () => judge(input, signal), signal)),
        },
      });
      const actor = createActor(machine, { input: { critic, request }, clock, inspect: recorder.inspect });
      clock.attach(actor.system);
      return {
        actor,
        recorder,
        drive: smallDrive({ actor, gates, clock }),
        finish: () => {
          const end = lastEvent(path);
          const output = actor.getSnapshot().output as CriticOutput | undefined;
          if (path.state.status !== "done") return output === undefined ? undefined : "output before the end";
          const expected: CriticOutput = end.type.startsWith(DONE_ACTOR)
            ? { status: "judged", reply: end.output as CriticReply }
            : { status: "errored", error: String(end.error) };
          return outputCheck(output, expected);
        },
      };
    },
  };
}

// ---------------------------------------------------------------------------
// scheduler

/**
 * A cooldown store with the worker's `CooldownStore` interface (load and save by
 * session, as JSON), in memory instead of a JetStream KV bucket.
 */
export function memoryCooldownStore(initial: Record<string, Cooldowns> = {}): Pick<CooldownStore, "load" | "save"> {
  const entries = new Map(Object.entries(initial).map(([key, value]) => [key, JSON.stringify(value)]));
  return {
    load: async (sessionId) => JSON.parse(entries.get(sessionId) ?? "{}") as Cooldowns,
    save: async (sessionId, cooldowns) => {
      entries.set(sessionId, JSON.stringify(cooldowns));
    },
  };
}

export function schedulerUnderTest(oracle: Oracle, label: string, cooldowns: Cooldowns): MachineUnderTest {
  const sensors = runFastSensors("I'm stressed about my deadline");
  const request: PlanWavesRequest = {
    session_id: "paths",
    turn_id: 1,
    sensors,
    modulators: neutralModulators(),
    token_budget: 8_000,
  };
  const input: SchedulerInput = {
    request,
    manifests: [...AGENTS.values()].map((agent) => agent.manifest),
    now: NOW,
  };
  /** The worker's actors (src/workers/coreEndpoints.ts), each run on a fresh store seeded for the scenario. */
  const actorsOn = (store: ReturnType<typeof memoryCooldownStore>) => ({
    loadCooldowns: fromPromise<Cooldowns, { session_id: string }>(({ input }) => store.load(input.session_id)),
    saveCooldowns: fromPromise<void, { session_id: string; cooldowns: Cooldowns }>(({ input }) =>
      store.save(input.session_id, input.cooldowns),
    ),
  });
  const seeded = () => memoryCooldownStore({ paths: cooldowns });
  const model = smallModel(schedulerMachine.provide({ actors: actorsOn(seeded()) }), input, oracle, {
    loadCooldowns: (serviceInput: { session_id: string }) => seeded().load(serviceInput.session_id),
    saveCooldowns: (serviceInput: { session_id: string; cooldowns: Cooldowns }) =>
      seeded().save(serviceInput.session_id, serviceInput.cooldowns),
  });
  return {
    name: `scheduler (${label})`,
    model,
    start: (path) => {
      const gates = new Gates();
      const clock = new ManualClock();
      const recorder = new Recorder();
      const store = seeded();
      const machine = schedulerMachine.provide({
        actors: {
          loadCooldowns: fromPromise<Cooldowns, { session_id: string }>(({ input, signal: abort }) =>
            gates.hold("loadCooldowns", input, () => store.load(input.session_id), abort),
          ),
          saveCooldowns: fromPromise<void, { session_id: string; cooldowns: Cooldowns }>(({ input, signal: abort }) =>
            gates.hold("saveCooldowns", input, () => store.save(input.session_id, input.cooldowns), abort),
          ),
        },
      });
      const actor = createActor(machine, { input, clock, inspect: recorder.inspect });
      clock.attach(actor.system);
      return {
        actor,
        recorder,
        drive: smallDrive({ actor, gates, clock }),
        finish: async () => {
          if (path.state.status !== "done") return undefined;
          const output = actor.getSnapshot().output as SchedulerOutput;
          const context = path.state.context as { plan: unknown; next: Cooldowns; cooldowns: Cooldowns };
          // The plan the model computed from the cooldowns the real store gave (or none), and a note per failure.
          const notes = path.steps
            .filter((step) => step.event.type.startsWith(ERROR_ACTOR))
            .map((step) => (step.event.type.includes("loading") ? "cooldowns not loaded" : "cooldowns not saved"));
          const problem = outputCheck(output.reply, context.plan);
          if (problem) return problem;
          if (output.notes.length !== notes.length || output.notes.some((note, i) => !note.startsWith(notes[i]!)))
            return `notes ${JSON.stringify(output.notes)}, expected ${JSON.stringify(notes)}`;
          // What the store holds now: the planned cooldowns once saved, else what it held.
          const saved = path.steps.some(
            (step) => step.event.type.startsWith(DONE_ACTOR) && step.event.type.includes("saving"),
          );
          return outputCheck(await store.load("paths"), saved ? context.next : cooldowns);
        },
      };
    },
  };
}
