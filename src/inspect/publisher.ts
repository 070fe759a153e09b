import type { NatsConnection } from "@nats-io/nats-core";
import type { InspectionEvent, Observer } from "xstate";
import { type Json, jsonSafe } from "./jsonSafe.ts";
import { type InspectionRecord, inspectSubject } from "./record.ts";

/**
 * The inspection observer a runner or worker gives its actors: each XState
 * inspection event becomes a compact InspectionRecord published on
 * `conclave.inspect.<process>` (core NATS, fire-and-forget). It never throws
 * into the actor and never waits: a record that cannot be built or sent is
 * counted and dropped.
 */
export interface InspectionPublisher extends Observer<InspectionEvent> {
  readonly published: number;
  readonly dropped: number;
}

/** Largest record sent; a bigger one loses its context and payloads first. */
export const MAX_RECORD_BYTES = 16_384;

interface ActorRefLike {
  sessionId: string;
  id: string;
  logic?: unknown;
  _parent?: ActorRefLike;
  getSnapshot?: () => unknown;
}

const encoder = new TextEncoder();

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export function createInspectionPublisher(
  nc: Pick<NatsConnection, "publish" | "isClosed">,
  processName: string,
  maxBytes = MAX_RECORD_BYTES,
): InspectionPublisher {
  const subject = inspectSubject(processName);
  const session = (id: string) => `${processName}:${id}`;
  let seq = 0;
  let published = 0;
  let dropped = 0;

  // Without `seq`: numbered once built, so a gap in the numbers means a record was dropped.
  const toRecord = (event: InspectionEvent): DistributiveOmit<InspectionRecord, "seq"> | null => {
    const actor = event.actorRef as unknown as ActorRefLike;
    const base = {
      v: 1 as const,
      process: processName,
      ts: Date.now(),
      session: session(actor.sessionId),
      ...(event.rootId ? { root: session(event.rootId) } : {}),
    };
    switch (event.type) {
      case "@xstate.actor": {
        const logic = actor.logic as { id?: unknown; getStateNodeById?: unknown } | undefined;
        const machine =
          typeof logic?.getStateNodeById === "function" && typeof logic.id === "string" ? logic.id : undefined;
        return {
          ...base,
          kind: "actor",
          name: String(actor.id).slice(0, 200),
          ...(machine ? { machine } : {}),
          ...(actor._parent ? { parent: session(actor._parent.sessionId) } : {}),
        };
      }
      case "@xstate.event": {
        const source = (event.sourceRef as unknown as ActorRefLike | undefined)?.sessionId;
        return {
          ...base,
          kind: "event",
          event: eventBody(event.event),
          ...(source ? { source: session(source) } : {}),
        };
      }
      case "@xstate.snapshot":
        return { ...base, kind: "snapshot", event: eventBody(event.event), snapshot: snapshotBody(event.snapshot) };
      default:
        return null;
    }
  };

  return {
    next(event) {
      try {
        if (nc.isClosed()) return;
        const built = toRecord(event);
        if (!built) return;
        const record = { ...built, seq: seq++ } as InspectionRecord;
        const data = fitted(record, maxBytes);
        if (!data) {
          dropped++;
          return;
        }
        nc.publish(subject, data);
        published++;
      } catch {
        dropped++;
      }
    },
    get published() {
      return published;
    },
    get dropped() {
      return dropped;
    },
  };
}

function eventBody(event: unknown): { type: string } & Record<string, Json> {
  const copy = jsonSafe(event);
  const type = (event as { type?: unknown } | null)?.type;
  const body = copy && typeof copy === "object" && !Array.isArray(copy) ? copy : {};
  return { ...body, type: String(type ?? "unknown").slice(0, 500) };
}

function snapshotBody(snapshot: unknown): Extract<InspectionRecord, { kind: "snapshot" }>["snapshot"] {
  const s = (snapshot ?? {}) as {
    status?: unknown;
    value?: unknown;
    context?: unknown;
    output?: unknown;
    error?: unknown;
  };
  return {
    status: String(s.status ?? "unknown"),
    ...(s.value !== undefined ? { value: jsonSafe(s.value) } : {}),
    ...(s.context !== undefined ? { context: jsonSafe(s.context) } : {}),
    ...(s.output !== undefined ? { output: jsonSafe(s.output) } : {}),
    ...(s.error !== undefined ? { error: jsonSafe(s.error) } : {}),
  };
}

/** The record's bytes, trimmed to `maxBytes` (payloads go first, the state value stays); null if it cannot fit. */
function fitted(record: InspectionRecord, maxBytes: number): Uint8Array | null {
  const full = encoder.encode(JSON.stringify(record));
  if (full.length <= maxBytes) return full;
  const omitted = `[omitted: ${full.length} bytes in all]`;
  const trimmed: InspectionRecord =
    record.kind === "actor"
      ? record
      : record.kind === "event"
        ? { ...record, event: { type: record.event.type, omitted } }
        : {
            ...record,
            event: { type: record.event.type, omitted },
            snapshot: {
              status: record.snapshot.status,
              ...(record.snapshot.value !== undefined ? { value: record.snapshot.value } : {}),
              context: omitted,
            },
          };
  const small = encoder.encode(JSON.stringify(trimmed));
  return small.length <= maxBytes ? small : null;
}
