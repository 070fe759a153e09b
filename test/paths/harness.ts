import {
  type AnyActorScope,
  type AnyEventObject,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type AnyTransitionDefinition,
  createEmptyActor,
  type InspectionEvent,
} from "xstate";
import { getShortestPaths, getSimplePaths, joinPaths, type StatePath } from "xstate/graph";

/**
 * The machinery of the model-based path tests, shared by every machine:
 *
 * - an {@link Oracle}: what the REAL implementation returns for an input, computed
 *   (asynchronously) before the graph is traversed, so that the event samples the
 *   traversal sends (`xstate.done.actor.*` with their `output`, `agent.replied`, the
 *   voice's stream parts) are the real ones;
 * - {@link shortestPaths}, {@link simplePaths}, {@link simplePathsFrom}: `getShortestPaths`
 *   and `getSimplePaths` from `xstate/graph` on the real machine, with those samples;
 * - a {@link ManualClock} and {@link Gates}: when a path is replayed against a live
 *   actor, every invoked service waits at a gate until the path says how it ends
 *   (the real implementation answers, it fails, or it never answers and a delay
 *   fires), so the actor follows the path step by step;
 * - a {@link Recorder}: what the live actor did, macrostep by macrostep (event,
 *   snapshot, the transitions taken, what it emitted), which the replay compares
 *   with the path and the coverage report counts.
 */

export type Path = StatePath<AnyMachineSnapshot, AnyEventObject>;

/** A fault a path injects on purpose (a service that throws), as opposed to a failure of the real implementation. */
export class SteeredFault extends Error {
  readonly code = "agent_failed";
  constructor(what: string) {
    super(`steered fault: ${what}`);
    this.name = "SteeredFault";
  }
}

// ---------------------------------------------------------------------------
// Oracle: real outcomes by input

export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Real outcomes, keyed by service and input. A lookup that misses is remembered and computed by {@link fill}. */
export class Oracle {
  private readonly known = new Map<string, Outcome>();
  private readonly wanted = new Map<string, () => Promise<unknown>>();

  lookup(service: string, input: unknown, compute: () => Promise<unknown>): Outcome | undefined {
    const key = `${service}:${JSON.stringify(input)}`;
    const hit = this.known.get(key);
    if (hit) return hit;
    this.wanted.set(key, compute);
    return undefined;
  }

  get missing(): number {
    return this.wanted.size;
  }

  get size(): number {
    return this.known.size;
  }

  async fill(): Promise<void> {
    const wanted = [...this.wanted];
    this.wanted.clear();
    for (const [key, compute] of wanted) {
      try {
        this.known.set(key, { ok: true, value: await compute() });
      } catch (error) {
        this.known.set(key, { ok: false, error });
      }
    }
  }
}

// ---------------------------------------------------------------------------
// The model: how a machine's graph is traversed

export interface Model {
  /** The machine provided with its real implementations (traversal only reads its definition). */
  machine: AnyStateMachine;
  input: unknown;
  /** The event samples to try in a state (may consult the oracle; an empty list stops there). */
  events(snapshot: AnyMachineSnapshot): AnyEventObject[];
  /** What identifies a state of the model besides how it was reached: state value plus the context that matters. */
  key(snapshot: AnyMachineSnapshot): string;
  /** What a replay compares between the path's state and the live actor's (default: `key`). */
  compare?(snapshot: AnyMachineSnapshot): string;
  /** Called for every (state, event, previous state) the traversal meets, before `events`, to track progress. */
  note?(
    snapshot: AnyMachineSnapshot,
    event: AnyEventObject | undefined,
    previous: AnyMachineSnapshot | undefined,
  ): void;
}

/**
 * A vertex of the traversal: the model key, and the event and previous state value
 * it was reached by (as `createTestModel` does), so that every transition into a
 * state leads to its own vertex and shortest paths take every transition.
 */
export const serializer =
  (model: Model) =>
  (snapshot: AnyMachineSnapshot, event: AnyEventObject | undefined, previous?: AnyMachineSnapshot): string => {
    model.note?.(snapshot, event, previous);
    return `${model.key(snapshot)} <- ${event?.type ?? ""} from ${previous ? JSON.stringify(previous.value) : ""}`;
  };

/**
 * The machine as the traversal sees it: the same definition, except that every
 * transition returns a snapshot object of its own (a transition that changes
 * nothing may hand back its input), so models can track per-vertex progress.
 */
export function traversable(machine: AnyStateMachine): AnyStateMachine {
  const logic = Object.create(machine) as AnyStateMachine;
  logic.transition = ((snapshot, event, scope) => ({
    ...machine.transition(snapshot, event, scope),
  })) as AnyStateMachine["transition"];
  return logic;
}

/** An actor scope that runs nothing: what `xstate/graph` uses to compute transitions. */
export function pureScope(): AnyActorScope {
  const empty = createEmptyActor();
  return {
    self: empty,
    logger: () => {},
    id: "",
    sessionId: "paths",
    defer: () => {},
    system: empty.system,
    stopChild: () => {},
    emit: () => {},
    actionExecutor: () => {},
  } as unknown as AnyActorScope;
}

/**
 * Fills the oracle with every real outcome the traversal will ask for: a breadth-first
 * walk in the same order as `xstate/graph`'s (so that it meets the same representative
 * state for each vertex), which pauses at each level to compute what it missed.
 */
export async function prefill(
  model: Model,
  oracle: Oracle,
  options: { fromState?: AnyMachineSnapshot; stopWhen?: (snapshot: AnyMachineSnapshot) => boolean } = {},
): Promise<number> {
  const scope = pureScope();
  const serialize = serializer(model);
  const machine = traversable(model.machine);
  const start = options.fromState ?? machine.getInitialSnapshot(scope, model.input);
  const seen = new Set<string>();
  let frontier: { state: AnyMachineSnapshot; event?: AnyEventObject; previous?: AnyMachineSnapshot }[] = [
    { state: start },
  ];
  while (frontier.length > 0) {
    const level: AnyMachineSnapshot[] = [];
    for (const item of frontier) {
      const key = serialize(item.state, item.event, item.previous);
      if (seen.has(key)) continue;
      seen.add(key);
      if (options.stopWhen?.(item.state)) continue;
      level.push(item.state);
    }
    for (let rounds = 0; ; rounds++) {
      for (const state of level) model.events(state);
      if (oracle.missing === 0) break;
      if (rounds > 20) throw new Error("prefill: the oracle keeps missing");
      await oracle.fill();
    }
    frontier = [];
    for (const state of level) {
      for (const event of model.events(state)) {
        frontier.push({ state: machine.transition(state, event, scope), event, previous: state });
      }
    }
  }
  return seen.size;
}

/** Shortest paths from `xstate/graph`, after the oracle has everything they need. */
export async function shortestPaths(model: Model, oracle: Oracle): Promise<{ paths: Path[]; vertices: number }> {
  const vertices = await prefill(model, oracle);
  const paths = getShortestPaths(traversable(model.machine), {
    input: model.input,
    events: (snapshot) => model.events(snapshot),
    serializeState: serializer(model),
  }) as Path[];
  if (oracle.missing > 0) throw new Error(`shortest paths: ${oracle.missing} real outcome(s) still unknown`);
  return { paths, vertices };
}

/** Simple paths from `xstate/graph` (all of them: for machines whose simple paths are few). */
export async function simplePaths(model: Model, oracle: Oracle): Promise<Path[]> {
  await prefill(model, oracle);
  const paths = getSimplePaths(traversable(model.machine), {
    input: model.input,
    events: (snapshot) => model.events(snapshot),
    serializeState: serializer(model),
  }) as Path[];
  if (oracle.missing > 0) throw new Error(`simple paths: ${oracle.missing} real outcome(s) still unknown`);
  return paths;
}

/**
 * The path with its states recomputed from its events, from the initial state.
 * (`xstate/graph` keeps, for each vertex, the last snapshot that serialized to it,
 * which may carry another route's context; a path continued from a state needs
 * the state its own events lead to.)
 */
export function materialize(model: Model, path: Path): Path {
  const scope = pureScope();
  const serialize = serializer(model);
  const machine = traversable(model.machine);
  let state = machine.getInitialSnapshot(scope, model.input);
  serialize(state, undefined);
  const steps = [{ state, event: path.steps[0]!.event }];
  for (const step of path.steps.slice(1)) {
    const previous = state;
    state = machine.transition(previous, step.event, scope);
    serialize(state, step.event, previous);
    steps.push({ state, event: step.event });
  }
  return { state, steps, weight: path.weight };
}

/**
 * Simple paths of one segment of a long machine: from `head`'s last state until
 * `leaves` says the segment is over, each joined to `head` (as `TestModel.getSimplePathsFrom`
 * does). Only the paths that end by leaving the segment are kept.
 */
export async function simplePathsFrom(
  model: Model,
  oracle: Oracle,
  head: Path,
  leaves: (snapshot: AnyMachineSnapshot) => boolean,
): Promise<Path[]> {
  const serializeState = serializer(model);
  head = materialize(model, head);
  for (let attempt = 0; ; attempt++) {
    await prefill(model, oracle, { fromState: head.state, stopWhen: leaves });
    const tails = getSimplePaths(traversable(model.machine), {
      input: model.input,
      fromState: head.state,
      events: (snapshot) => model.events(snapshot),
      serializeState,
      stopWhen: leaves,
    }) as Path[];
    if (oracle.missing === 0) {
      return tails.filter((tail) => tail.steps.length > 1 && leaves(tail.state)).map((tail) => joinPaths(head, tail));
    }
    if (attempt > 5) throw new Error("simple paths: the oracle keeps missing");
    await oracle.fill();
  }
}

/** Drops the paths whose events are a prefix of another path's: replaying the longer one checks every state of both. */
export function withoutPrefixes(paths: Path[]): Path[] {
  const signature = (path: Path) => path.steps.map((step) => JSON.stringify(step.event));
  const sorted = [...paths].sort((a, b) => b.steps.length - a.steps.length);
  const kept: { path: Path; events: string[] }[] = [];
  for (const path of sorted) {
    const events = signature(path);
    if (kept.some((longer) => events.every((event, index) => longer.events[index] === event))) continue;
    kept.push({ path, events });
  }
  return kept.map((entry) => entry.path);
}

/** Evenly spread picks from a list, at most `cap` of them (deterministic). */
export function spread<T>(items: readonly T[], cap: number): T[] {
  if (items.length <= cap) return [...items];
  return Array.from({ length: cap }, (_, index) => items[Math.floor((index * items.length) / cap)]!);
}

// ---------------------------------------------------------------------------
// Replay: a live actor driven along a path

/**
 * A clock whose timers fire only when told, by the delayed event they carry
 * (`xstate.after.<delay>.<state id>`): an `after` edge of a path fires exactly
 * that timer, whatever the others' delays.
 */
export class ManualClock {
  private nextId = 0;
  private readonly timers = new Map<number, { fn: () => void; key: string; type: string }>();
  private readonly bound = new Set<string>();
  private system: { getSnapshot(): { _scheduledEvents: Record<string, { event: AnyEventObject }> } } | undefined;

  attach(system: { getSnapshot(): { _scheduledEvents: Record<string, { event: AnyEventObject }> } }): void {
    this.system = system;
  }

  setTimeout(fn: () => void, _delay: number): number {
    // The scheduler records the delayed event just before it asks the clock for a timer.
    const scheduled = Object.entries(this.system?.getSnapshot()._scheduledEvents ?? {}).find(
      ([key]) => !this.bound.has(key),
    );
    const id = this.nextId++;
    const [key, event] = scheduled ?? [`unbound:${id}`, { event: { type: "unknown" } }];
    this.bound.add(key);
    this.timers.set(id, { fn, key, type: event.event.type });
    return id;
  }

  clearTimeout(id: number): void {
    const timer = this.timers.get(id);
    if (!timer) return;
    this.timers.delete(id);
    this.bound.delete(timer.key);
  }

  pending(): string[] {
    return [...this.timers.values()].map((timer) => timer.type);
  }

  /** Fires the one pending timer of this event type; false when there is none. */
  fire(type: string): boolean {
    const found = [...this.timers].find(([, timer]) => timer.type === type);
    if (!found) return false;
    const [id, timer] = found;
    this.timers.delete(id);
    this.bound.delete(timer.key);
    timer.fn();
    return true;
  }
}

export type Release = "real" | "fail";

interface PendingCall {
  channel: string;
  input: unknown;
  release(mode: Release): void;
}

/**
 * Where invoked services wait. A call registers under a channel (`retrieveMemory`,
 * `callAgent:emotion.stress`, …) and stays pending until the replay releases it:
 * `real` runs the real implementation and answers with its result, `fail` throws
 * a {@link SteeredFault}. A call nobody releases never answers. `auto` releases
 * calls as they come (for actors a path does not steer).
 */
export class Gates {
  private readonly calls: PendingCall[] = [];
  auto: ((channel: string, input: unknown) => Release | undefined) | undefined;

  hold<T>(channel: string, input: unknown, real: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const call: PendingCall = {
        channel,
        input,
        release: (mode) => {
          const index = this.calls.indexOf(call);
          if (index >= 0) this.calls.splice(index, 1);
          if (mode === "real") real().then(resolve, reject);
          else reject(new SteeredFault(channel));
        },
      };
      signal?.addEventListener("abort", () => {
        const index = this.calls.indexOf(call);
        if (index >= 0) this.calls.splice(index, 1);
        reject(new Error(`${channel}: aborted`));
      });
      const mode = this.auto?.(channel, input);
      if (mode) call.release(mode);
      else this.calls.push(call);
    });
  }

  pendingChannels(): string[] {
    return this.calls.map((call) => call.channel);
  }

  /**
   * Releases the oldest pending call on this channel, once there is one (an actor
   * invoked by the previous step may still be on its way there, as a session's
   * turn goes through its first stages); false when none comes.
   */
  async release(channel: string, mode: Release, timeoutMs = 1_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const call = this.calls.find((candidate) => candidate.channel === channel);
      if (call) {
        call.release(mode);
        return true;
      }
      if (Date.now() > deadline) return false;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}

/** One macrostep of the live actor: the event it processed and what came of it. */
export interface Macrostep {
  event: AnyEventObject;
  snapshot: AnyMachineSnapshot;
  /** Each microstep: the transitions taken and the snapshot after it. */
  microsteps: { transitions: AnyTransitionDefinition[]; snapshot: AnyMachineSnapshot }[];
  /** Whatever the host's hooks were told during the macrostep (the turn's records…). */
  emitted: unknown[];
}

/** Watches the root actor of a system through `inspect`: its macrosteps, in order. */
export class Recorder {
  readonly steps: Macrostep[] = [];
  private consumed = 0;
  private microsteps: Macrostep["microsteps"] = [];
  private emitted: unknown[] = [];
  private waiting: (() => void) | undefined;

  readonly inspect = (event: InspectionEvent): void => {
    if (event.actorRef.sessionId !== event.rootId) return;
    if (event.type === "@xstate.microstep") {
      this.microsteps.push({ transitions: event._transitions, snapshot: event.snapshot as AnyMachineSnapshot });
    } else if (event.type === "@xstate.snapshot") {
      this.steps.push({
        event: event.event,
        snapshot: event.snapshot as AnyMachineSnapshot,
        microsteps: this.microsteps,
        emitted: this.emitted,
      });
      this.microsteps = [];
      this.emitted = [];
      this.waiting?.();
    }
  };

  /** What the host's hooks report (it belongs to the macrostep under way). */
  emit(value: unknown): void {
    this.emitted.push(value);
  }

  /** The next macrostep not yet looked at, waiting for it if need be. */
  async next(timeoutMs = 2_000): Promise<Macrostep | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (this.consumed >= this.steps.length) {
      if (Date.now() > deadline) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 20);
        this.waiting = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiting = undefined;
    }
    return this.steps[this.consumed++];
  }

  /**
   * Whether a macrostep is already waiting. What an actor does on its own in
   * reaction to a step (a wave's `wave.done` after its last answer, the error of
   * an actor that throws as it starts, a stopped turn's end) is processed in the
   * same task as that step, so it is logged by the time the step has been read.
   */
  async settled(): Promise<boolean> {
    await Promise.resolve();
    return this.consumed < this.steps.length;
  }
}

// ---------------------------------------------------------------------------
// Coverage

/** Every state node of a machine and what the live actors reached. */
export class Coverage {
  readonly states = new Set<string>();
  readonly transitions = new Set<AnyTransitionDefinition>();
  /** Replays run. */
  paths = 0;
  /** Shortest paths generated (every one is replayed). */
  shortest = 0;
  /** Simple paths replayed, and how many `xstate/graph` found. */
  simple = 0;
  simpleFound = 0;

  add(step: Macrostep): void {
    for (const microstep of step.microsteps) {
      for (const node of microstep.snapshot._nodes) this.states.add(node.id);
      for (const transition of microstep.transitions) {
        this.transitions.add(transition);
        this.states.add(transition.source.id);
      }
    }
    for (const node of step.snapshot._nodes) this.states.add(node.id);
  }
}

/** The active state nodes of a snapshot, by id. */
export const nodeIds = (snapshot: AnyMachineSnapshot): string[] => snapshot._nodes.map((node) => node.id);

/** The event types the active states of a snapshot handle (what `xstate/graph` tries by default). */
export const ownEvents = (snapshot: AnyMachineSnapshot): string[] => [
  ...new Set(snapshot._nodes.flatMap((node) => node.ownEvents)),
];

/** The `src` of the invoke with this id among the active states. */
export function invokeSrc(snapshot: AnyMachineSnapshot, id: string): string {
  for (const node of snapshot._nodes) {
    const invoke = node.invoke.find((candidate) => candidate.id === id);
    if (invoke) return typeof invoke.src === "string" ? invoke.src : id;
  }
  throw new Error(`no invoke ${id} in ${JSON.stringify(snapshot.value)}`);
}

/** The input an invoked child was started with (in a traversal its actor exists but never runs). */
export function childInput(snapshot: AnyMachineSnapshot, id: string): unknown {
  const child = snapshot.children[id] as
    | { getSnapshot(): { input?: unknown }; options?: { input?: unknown } }
    | undefined;
  if (!child) throw new Error(`no child ${id} in ${JSON.stringify(snapshot.value)}`);
  return child.getSnapshot().input ?? child.options?.input;
}

export const DONE_ACTOR = "xstate.done.actor.";
export const ERROR_ACTOR = "xstate.error.actor.";
export const AFTER = "xstate.after.";
export const DONE_STATE = "xstate.done.state.";

/** A live actor set up for one path: how to make it take each event, and what to check. */
export interface Live {
  actor: { start(): void; stop(): void; getSnapshot(): AnyMachineSnapshot };
  recorder: Recorder;
  /** Makes the actor take the path's next event (`before` is the path's state before it); a problem, if any. */
  drive(event: AnyEventObject, before: AnyMachineSnapshot): Promise<string | undefined>;
  /** Compares the event fields that matter beyond the type; a problem, if any. */
  sameEvent?(expected: AnyEventObject, actual: AnyEventObject): string | undefined;
  /** Checks what the actor emitted in a macrostep; a problem, if any. */
  check?(step: Macrostep, index: number): string | undefined;
  /** Checks the end of the path (output, hooks); a problem, if any. */
  finish?(): string | undefined | Promise<string | undefined>;
}

/**
 * Replays a path on a live actor: step by step, the actor is made to take the
 * path's event (unless it already took it on its own, as a wave reports
 * `wave.done` right after its last agent), then must have processed exactly
 * that event and be in the path's next state.
 */
export async function replayPath(
  model: Model,
  path: Path,
  coverage: Coverage,
  start: () => Live,
): Promise<string | undefined> {
  const live = start();
  const compare = model.compare ?? model.key;
  coverage.paths += 1;
  try {
    live.actor.start();
    for (let index = 0; index < path.steps.length; index++) {
      const step = path.steps[index]!;
      const where = `step ${index} (${step.event.type})`;
      if (index > 0 && !(await live.recorder.settled())) {
        const problem = await live.drive(step.event, path.steps[index - 1]!.state);
        if (problem) return `${where}: ${problem}`;
      }
      const taken = await live.recorder.next();
      if (!taken) return `${where}: the actor did nothing`;
      coverage.add(taken);
      if (taken.event.type !== step.event.type) return `${where}: the actor processed ${taken.event.type} instead`;
      const mismatch = live.sameEvent?.(step.event, taken.event);
      if (mismatch) return `${where}: ${mismatch}`;
      if (compare(taken.snapshot) !== compare(step.state))
        return `${where}: the actor is in ${compare(taken.snapshot)}, the path in ${compare(step.state)}`;
      const problem = live.check?.(taken, index);
      if (problem) return `${where}: ${problem}`;
    }
    const snapshot = live.actor.getSnapshot();
    if (snapshot.status === "error") return `the actor crashed: ${String(snapshot.error)}`;
    return await live.finish?.();
  } finally {
    live.actor.stop();
  }
}

/** A one-line summary of a path for failure messages. */
export const describePath = (path: Path): string =>
  path.steps
    .slice(1)
    .map((step) => step.event.type.replace(/^xstate\./, ""))
    .join(" → ") || "(initial state)";
