import type { InspectionRecord } from "../inspect/record.ts";

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
}

/**
 * Follows the actors of the drawn machines from the inspection records of
 * every process: remembers each one's machine (told once, when it is created),
 * reports each state change, and keeps enough to bring a newly opened page up
 * to date. Records of other actors (promise actors and the like) are ignored.
 */
export class LiveActors {
  readonly #machines: ReadonlySet<string>;
  readonly #known = new Map<string, Omit<ActorUpdate, "value" | "status" | "ts">>();
  readonly #live = new Map<string, ActorUpdate>();
  readonly #recent: ActorUpdate[] = [];
  readonly #maxKnown: number;
  readonly #maxRecent: number;

  constructor(machineIds: Iterable<string>, { maxKnown = 20_000, maxRecent = 1_500 } = {}) {
    this.#machines = new Set(machineIds);
    this.#maxKnown = maxKnown;
    this.#maxRecent = maxRecent;
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
    if (previous && previous.status === status && JSON.stringify(previous.value) === JSON.stringify(value)) return null;
    const update = this.#record({ ...actor, value, status, ts: record.ts });
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
