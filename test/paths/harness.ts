import {
  Actor,
  type AnyEventObject,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type AnyStateNode,
  type AnyTransitionDefinition,
  getStateNodes,
  type InspectionEvent,
  initialTransition,
  transition,
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
  const serialize = serializer(model);
  const machine = traversable(model.machine);
  const start = options.fromState ?? initialTransition(machine, model.input)[0];
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
        frontier.push({ state: transition(machine, state, event)[0], event, previous: state });
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
  const serialize = serializer(model);
  const machine = traversable(model.machine);
  let state = initialTransition(machine, model.input)[0];
  serialize(state, undefined);
  const steps = [{ state, event: path.steps[0]!.event }];
  for (const step of path.steps.slice(1)) {
    const previous = state;
    state = transition(machine, previous, step.event)[0];
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
 *
 * The clock learns which event a timer carries from the system's inspection
 * events: every delayed `raise`/`sendTo` an actor executes is scheduled (one
 * timer each, in the order they were executed) once its macrostep is over.
 */
export class ManualClock {
  private nextId = 0;
  private readonly timers = new Map<number, { fn: () => void; type: string }>();
  /** Delayed events executed and not yet given a timer, oldest first. */
  private readonly announced: string[] = [];

  /** Watches a system's actors for the delayed events they schedule (before the root actor starts). */
  attach(system: { inspect(observer: (event: InspectionEvent) => void): unknown }): void {
    system.inspect((event) => {
      if (event.type !== "@xstate.action") return;
      if (event.action.type !== "xstate.raise" && event.action.type !== "xstate.sendTo") return;
      const params = event.action.params as { event?: AnyEventObject; delay?: unknown } | undefined;
      if (typeof params?.delay === "number") this.announced.push(params.event?.type ?? "unknown");
    });
  }

  setTimeout(fn: () => void, _delay: number): number {
    const id = this.nextId++;
    this.timers.set(id, { fn, type: this.announced.shift() ?? "unknown" });
    return id;
  }

  clearTimeout(id: number): void {
    this.timers.delete(id);
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

  /** The root actor's snapshot before the microstep under way, and the event of the last microstep. */
  private before: AnyMachineSnapshot | undefined;
  private lastEvent: AnyEventObject | undefined;

  readonly inspect = (event: InspectionEvent): void => {
    if (event.actorRef.sessionId !== event.rootId) return;
    if (event.type === "@xstate.microstep") {
      const snapshot = event.snapshot as AnyMachineSnapshot;
      // A microstep on the event the previous one took (or on `xstate.init`) takes eventless transitions.
      const eventless = event.event === this.lastEvent || event.event.type === "xstate.init";
      const transitions = takenTransitions(this.before, snapshot, event.event, eventless);
      this.microsteps.push({ transitions, snapshot });
      this.before = snapshot;
      this.lastEvent = event.event;
    } else if (event.type === "@xstate.snapshot") {
      this.before = event.snapshot as AnyMachineSnapshot;
      this.lastEvent = undefined;
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
      for (const id of nodeIds(microstep.snapshot)) this.states.add(id);
      for (const transition of microstep.transitions) {
        this.transitions.add(transition);
        this.states.add(transition.source.id);
      }
    }
    for (const id of nodeIds(step.snapshot)) this.states.add(id);
  }
}

/** The active state nodes of a snapshot, root first, in document order. */
export const activeNodes = (snapshot: AnyMachineSnapshot): AnyStateNode[] =>
  [...new Set(getStateNodes(snapshot.machine.root, snapshot.value))].sort((a, b) => a.order - b.order);

/** The active state nodes of a snapshot, by id. */
export const nodeIds = (snapshot: AnyMachineSnapshot): string[] => activeNodes(snapshot).map((node) => node.id);

/** The event types the active states of a snapshot handle (what `xstate/graph` tries by default). */
export const ownEvents = (snapshot: AnyMachineSnapshot): string[] => [
  ...new Set(activeNodes(snapshot).flatMap((node) => node.ownEvents)),
];

/** The initial state nodes a machine enters before any eventless transition: the root and its initial children. */
export function initialConfiguration(machine: AnyStateMachine): AnyStateNode[] {
  const nodes: AnyStateNode[] = [];
  let node: AnyStateNode | undefined = machine.root;
  while (node) {
    nodes.push(node);
    node = node.type === "compound" ? node.initial?.target[0] : undefined;
  }
  return nodes;
}

/**
 * The transitions a microstep of a live actor took, from the snapshot before it:
 * for an event, the machine's own `getTransitionData`; for an eventless microstep,
 * the first `always` transition whose guard holds, from each atomic state or its
 * nearest ancestor that has one (the SCXML selection XState follows; these
 * machines have no parallel states, so no conflicts to resolve). Before the first
 * microstep of an actor the machine is in its initial states.
 */
export function takenTransitions(
  before: AnyMachineSnapshot | undefined,
  after: AnyMachineSnapshot,
  event: AnyEventObject,
  eventless: boolean,
): AnyTransitionDefinition[] {
  const machine = after.machine;
  if (!eventless) {
    if (!before) throw new Error(`a microstep on ${event.type} before the actor had a snapshot`);
    return machine.getTransitionData(before, event);
  }
  const nodes = before ? activeNodes(before) : initialConfiguration(machine);
  // Guards read the context before the microstep (the first one's, which no transition has changed yet).
  const context = (before ?? after).context;
  const holds = (transition: AnyTransitionDefinition): boolean => {
    const guard = transition.guard;
    if (guard === undefined) return true;
    if (typeof guard === "function") return guard({ context, event }, undefined);
    const { type, params } = typeof guard === "string" ? { type: guard, params: undefined } : guard;
    const implementation = machine.implementations.guards[type as string];
    if (typeof implementation !== "function") throw new Error(`guard ${String(type)} has no implementation`);
    return implementation({ context, event }, params);
  };
  const taken: AnyTransitionDefinition[] = [];
  for (const atomic of nodes.filter((node) => node.type === "atomic" || node.type === "final")) {
    for (let node: AnyStateNode | undefined = atomic; node; node = node.parent) {
      const enabled = node.always?.find(holds);
      if (enabled) {
        if (!taken.includes(enabled)) taken.push(enabled);
        break;
      }
    }
  }
  return taken;
}

/** The `src` of the invoke with this id among the active states. */
export function invokeSrc(snapshot: AnyMachineSnapshot, id: string): string {
  for (const node of activeNodes(snapshot)) {
    const invoke = node.invoke.find((candidate) => candidate.id === id);
    if (invoke) return typeof invoke.src === "string" ? invoke.src : id;
  }
  throw new Error(`no invoke ${id} in ${JSON.stringify(snapshot.value)}`);
}

/** The input an invoked child was started with (in a traversal its actor exists but never runs). */
export function childInput(snapshot: AnyMachineSnapshot, id: string): unknown {
  const child = snapshot.children[id];
  if (!(child instanceof Actor)) throw new Error(`no child ${id} in ${JSON.stringify(snapshot.value)}`);
  return child.options.input;
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
