import {
  type AnyEventObject,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  initialTransition,
  transition,
} from "xstate";
import { getShortestPaths, getSimplePaths, joinPaths, type StatePath } from "xstate/graph";

/** Traversal: the real outcomes an oracle knows, and the paths `xstate/graph` generates on a model. */

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
