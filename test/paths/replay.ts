import type { AnyEventObject, AnyMachineSnapshot, AnyTransitionDefinition, InspectionEvent } from "xstate";
import { nodeIds, takenTransitions } from "./nodes.ts";
import { type Model, type Path, SteeredFault } from "./traversal.ts";

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
   * Waits until a call is pending on this channel (an actor invoked by the previous
   * step may still be on its way there, as a session's turn goes through its first
   * stages); false when none comes.
   */
  async waitFor(channel: string, timeoutMs = 1_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.calls.some((candidate) => candidate.channel === channel)) {
      if (Date.now() > deadline) return false;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return true;
  }

  /** Releases the oldest pending call on this channel, once there is one; false when none comes. */
  async release(channel: string, mode: Release, timeoutMs = 1_000): Promise<boolean> {
    if (!(await this.waitFor(channel, timeoutMs))) return false;
    this.calls.find((candidate) => candidate.channel === channel)!.release(mode);
    return true;
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
