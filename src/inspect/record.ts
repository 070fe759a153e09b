import { z } from "zod";
import { subjects } from "../bus/subjects.ts";

/**
 * One inspection event, compact and JSON-safe, as published on
 * `conclave.inspect.<process>`. Session ids are made unique across processes
 * by prefixing XState's per-process ids (`x:0`, `x:1`, …) with the process
 * name: `runner:4242:x:7`.
 *
 *   actor     an actor was created (`machine` is its machine's id, when it is one)
 *   event     an event was sent to an actor (`source` when another actor sent it)
 *   snapshot  an actor's state after an event (`value` for machines)
 */
const Base = z.object({
  v: z.literal(1),
  /** `<role>:<pid>`, also the subject's last token. */
  process: z.string().min(1).max(100),
  /** Per process, from 0, to spot gaps. */
  seq: z.number().int().nonnegative(),
  /** Milliseconds since the epoch, on the publisher's clock. */
  ts: z.number(),
  session: z.string().min(1).max(200),
  root: z.string().max(200).optional(),
});

const Json: z.ZodType<unknown> = z.unknown();
const EventBody = z.looseObject({ type: z.string().max(500) });
const SnapshotBody = z.object({
  status: z.string().max(20),
  value: Json.optional(),
  context: Json.optional(),
  output: Json.optional(),
  error: Json.optional(),
});

export const InspectionRecord = z.discriminatedUnion("kind", [
  Base.extend({
    kind: z.literal("actor"),
    /** The actor's id in its parent (`turn`, `0.turn.context`) or its session id. */
    name: z.string().max(200),
    machine: z.string().max(200).optional(),
    parent: z.string().max(200).optional(),
  }),
  Base.extend({ kind: z.literal("event"), event: EventBody, source: z.string().max(200).optional() }),
  Base.extend({ kind: z.literal("snapshot"), event: EventBody, snapshot: SnapshotBody }),
]);
export type InspectionRecord = z.infer<typeof InspectionRecord>;
export type ActorRecord = Extract<InspectionRecord, { kind: "actor" }>;
export type SnapshotRecord = Extract<InspectionRecord, { kind: "snapshot" }>;

export const inspectSubject = subjects.inspect;
export const inspectSubjectAll = subjects.allInspect;

/** A process's name on the inspection stream: `<role>:<pid>`, one subject token. */
export const processName = (role: string, pid = process.pid) => `${role}:${pid}`.replace(/[\s.*>]/g, "_");
