import { createInspector, type StatelyInspectionEvent } from "@statelyai/inspect";
import type { AnyStateMachine } from "xstate";
import type { InspectionRecord } from "./record.ts";

type Inspector = ReturnType<typeof createInspector>;

/**
 * Turns collected InspectionRecords back into the Stately inspector's own
 * events, through @statelyai/inspect's inspector API (`actor`, `event`,
 * `snapshot`), and remembers what a page that connects later must be replayed:
 * each live actor's registration, then the latest events.
 */
export class StatelyFeed {
  readonly #definitions: Map<string, AnyStateMachine>;
  readonly #actors = new Map<string, StatelyInspectionEvent>();
  readonly #recent: StatelyInspectionEvent[] = [];
  readonly #inspector: Inspector;
  readonly #maxRecent: number;
  readonly #maxActors: number;

  constructor(
    machines: Iterable<AnyStateMachine>,
    onEvent: (event: StatelyInspectionEvent) => void,
    { maxRecent = 500, maxActors = 2_000 } = {},
  ) {
    this.#definitions = new Map([...machines].map((machine) => [machine.id, machine]));
    this.#maxRecent = maxRecent;
    this.#maxActors = maxActors;
    this.#inspector = createInspector({
      send: (event) => {
        this.#remember(event);
        onEvent(event);
      },
    });
  }

  push(record: InspectionRecord): void {
    if (record.kind === "actor") {
      const machine = record.machine ? this.#definitions.get(record.machine) : undefined;
      // An actor-like object, not a plain id: with an id, inspector.actor() drops the
      // parentId and rootId it is given (an operator-precedence slip in 0.7.2).
      const root = record.root && record.root !== record.session ? { sessionId: record.root } : undefined;
      const parent = record.parent
        ? { sessionId: record.parent, ...(root && record.parent !== root.sessionId ? { _parent: root } : {}) }
        : undefined;
      this.#inspector.actor(
        {
          sessionId: record.session,
          id: record.name,
          ...(machine ? { logic: { config: machine.config } } : {}),
          ...(parent ? { _parent: parent } : {}),
          send: () => {},
          getSnapshot: () => undefined,
        } as unknown as Parameters<Inspector["actor"]>[0],
        { status: "active" },
      );
    } else if (record.kind === "event") {
      this.#inspector.event(record.session, record.event, record.source ? { source: record.source } : undefined);
    } else {
      const snapshot = record.snapshot as Parameters<Inspector["snapshot"]>[1];
      this.#inspector.snapshot(record.session, snapshot, { event: record.event });
      if (record.snapshot.status !== "active") this.#actors.delete(record.session);
    }
  }

  /** What a newly opened page needs: live actors first (so snapshots have something to attach to), then recent events. */
  replay(): StatelyInspectionEvent[] {
    const actors = new Set(this.#actors.values());
    return [...actors, ...this.#recent.filter((event) => !actors.has(event))];
  }

  #remember(event: StatelyInspectionEvent): void {
    if (event.type === "@xstate.actor") {
      this.#actors.set(event.sessionId, event);
      if (this.#actors.size > this.#maxActors) this.#actors.delete(this.#actors.keys().next().value!);
    }
    this.#recent.push(event);
    if (this.#recent.length > this.#maxRecent) this.#recent.shift();
  }
}
