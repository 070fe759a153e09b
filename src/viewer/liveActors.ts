import type { InspectionRecord, SnapshotRecord } from "../inspect/record.ts";

/** What the viewer page is told about one actor of a drawn machine, each time its state changes. */
export interface ActorUpdate {
  session: string;
  process: string;
  /** The machine's id (a key of the page's diagrams). */
  machine: string;
  name: string;
  parent?: string;
  /** XState state value: `"ingest"`, `{ agents: "wave" }`, …; null before the first snapshot. */
  value: unknown;
  status: string;
  ts: number;
  /** The type of the event that led to this state (the diagram lights the transition it took). */
  event?: string;
  /** A recipe run's diagram: the path of the node state the run waits at (a human node), once suspended. */
  waiting?: string;
}

/** What more an update says about an actor of `machine`, from its snapshot (e.g. where a recipe run waits). */
export type DescribeSnapshot = (
  machine: string,
  snapshot: SnapshotRecord["snapshot"],
) => Partial<Pick<ActorUpdate, "waiting">> | null;

/**
 * Follows the actors of the drawn machines from the inspection records of
 * every process: remembers each one's machine (told once, when it is created),
 * reports each state change, and keeps enough to bring a newly opened page up
 * to date. Records of other actors (promise actors and the like) are ignored.
 */
export class LiveActors {
  readonly #machines: Set<string>;
  readonly #known = new Map<string, Omit<ActorUpdate, "value" | "status" | "ts">>();
  readonly #live = new Map<string, ActorUpdate>();
  readonly #recent: ActorUpdate[] = [];
  readonly #maxKnown: number;
  readonly #maxRecent: number;
  readonly #describe: DescribeSnapshot | undefined;

  constructor(
    machineIds: Iterable<string>,
    {
      maxKnown = 20_000,
      maxRecent = 1_500,
      describe,
    }: { maxKnown?: number; maxRecent?: number; describe?: DescribeSnapshot } = {},
  ) {
    this.#machines = new Set(machineIds);
    this.#maxKnown = maxKnown;
    this.#maxRecent = maxRecent;
    this.#describe = describe;
  }

  /** Follows the actors of one more machine id from now on (a recipe's diagram, once drawn). */
  watch(machineId: string): void {
    this.#machines.add(machineId);
  }

  /** The update this record makes, or null when it changes nothing the page shows. */
  apply(record: InspectionRecord): ActorUpdate | null {
    if (record.kind === "actor") {
      if (!record.machine || !this.#machines.has(record.machine)) return null;
      this.#known.set(record.session, {
        session: record.session,
        process: record.process,
        machine: record.machine,
        name: record.name,
        ...(record.parent ? { parent: record.parent } : {}),
      });
      // Actors that never report an end (a crashed process) must not pile up.
      if (this.#known.size > this.#maxKnown) this.#forget(this.#known.keys().next().value!);
      return this.#record({ ...this.#known.get(record.session)!, value: null, status: "created", ts: record.ts });
    }
    if (record.kind !== "snapshot") return null;
    const actor = this.#known.get(record.session);
    if (!actor) return null;
    const previous = this.#live.get(record.session);
    const value = record.snapshot.value ?? null;
    const status = record.snapshot.status;
    const more = this.#describe?.(actor.machine, record.snapshot) ?? {};
    if (
      previous &&
      previous.status === status &&
      previous.waiting === more.waiting &&
      JSON.stringify(previous.value) === JSON.stringify(value)
    )
      return null;
    const update = this.#record({ ...actor, value, status, ts: record.ts, event: record.event.type, ...more });
    if (status !== "active") this.#forget(record.session);
    return update;
  }

  /** Live actors' latest state, then the recent history (for trails), in order. */
  replay(): ActorUpdate[] {
    const recent = new Set(this.#recent);
    return [...[...this.#live.values()].filter((update) => !recent.has(update)), ...this.#recent];
  }

  get liveCount(): number {
    return this.#live.size;
  }

  #record(update: ActorUpdate): ActorUpdate {
    if (update.status === "active" || update.status === "created") this.#live.set(update.session, update);
    this.#recent.push(update);
    if (this.#recent.length > this.#maxRecent) this.#recent.shift();
    return update;
  }

  #forget(session: string): void {
    this.#known.delete(session);
    this.#live.delete(session);
  }
}
