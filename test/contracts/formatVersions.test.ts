/**
 * Stored formats and wire messages are versioned (issue 41, docs/protocol.md "Format versions"):
 * what a turn stores carries `v`, requests and replies the `Conclave-Format` header; a reader refuses a
 * newer major with a `format_too_new` error and reads older records (no `v`: written by 0.2.0).
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { headers } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { JsonKv } from "../../src/bus/jsonKv.ts";
import { buckets, eventStreamOfSubject, runnerConsumer, streams, subjects } from "../../src/bus/subjects.ts";
import { submitTurn } from "../../src/client/turns.ts";
import { ErrorReply } from "../../src/contracts/errors.ts";
import { EngineEvent } from "../../src/contracts/events.ts";
import {
  checkHeaderFormat,
  EVENT_BATCH_FORMAT,
  FORMAT_HEADER,
  FORMAT_VERSION,
  FormatTooNewError,
  READ_FORMAT_VERSION,
  recordFormat,
  withFormat,
} from "../../src/contracts/format.ts";
import { DEFAULT_PARTITIONS, partitionOf } from "../../src/contracts/partitions.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { parseEntry } from "../../src/runtime/runner/delivery.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { settledStatus } from "../helpers/turnStatus.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
useInProcessStack(nats);
const decoder = new TextDecoder();
const encoder = new TextEncoder();

describe("format versions, as values", () => {
  it("stamps a record with this release's major and reads a record's major (0 when it has none)", () => {
    expect(withFormat({ a: 1 })).toEqual({ v: FORMAT_VERSION, a: 1 });
    expect(recordFormat({ a: 1 })).toBe(0);
    expect(recordFormat({ v: 3 })).toBe(3);
    expect(recordFormat({ v: "3" })).toBe(0);
    expect(recordFormat([1])).toBe(0);
    expect(() => checkHeaderFormat(String(READ_FORMAT_VERSION + 1), "a reply")).toThrow(FormatTooNewError);
    expect(() => checkHeaderFormat(undefined, "a reply")).not.toThrow();
    expect(() => checkHeaderFormat(String(FORMAT_VERSION), "a reply")).not.toThrow();
  });

  it("leaves a WAL entry of a newer format for a newer runner instead of calling it invalid", () => {
    const entry = { session_id: "s", turn_id: 1, text: "hi", on_busy: "enqueue", submitted_at: 1 };
    const newer = parseEntry(encoder.encode(JSON.stringify({ ...entry, v: READ_FORMAT_VERSION + 1 })));
    expect(newer.ok).toBe(false);
    expect(!newer.ok && newer.tooNew?.code).toBe("format_too_new");
    expect(parseEntry(encoder.encode(JSON.stringify(entry))).ok).toBe(true); // 0.2.0's, without `v`
    expect(parseEntry(encoder.encode(JSON.stringify(withFormat(entry)))).ok).toBe(true);
  });
});

describe("format versions, stored and on the wire", () => {
  it("stores every event of a turn, its session snapshot and its status with `v`", async () => {
    const nc = await nats.connect("runner");
    const client = await nats.connect("client");
    const { turn_id } = await submitTurn(client, "stamped", { text: "hello there" });
    expect((await settledStatus(nc, "stamped", turn_id)).status).toBe("done");
    // Every stored message of the turn, as stored (not parsed: parsing drops `v`).
    const jsm = await jetstreamManager(nc);
    const filter = subjects.turnEvents("stamped", turn_id, await eventStreamCount(jsm));
    const stream = eventStreamOfSubject(filter);
    const { first_seq, last_seq } = (await jsm.streams.info(stream)).state;
    const formats: number[] = [];
    /** The format of each event, alone or in a batch. */
    const eventFormats: number[] = [];
    for (let seq = first_seq; seq <= last_seq; seq++) {
      const msg = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
      if (msg?.subject !== filter) continue;
      const record = msg.json<{ events?: unknown[] }>();
      formats.push(recordFormat(record));
      if (recordFormat(record) === EVENT_BATCH_FORMAT) eventFormats.push(...(record.events ?? []).map(recordFormat));
      else eventFormats.push(recordFormat(record));
    }
    expect(eventFormats.length).toBeGreaterThan(5);
    // Events stored alone are this release's format; the batches holding the others (format 2) too.
    expect(new Set(eventFormats)).toEqual(new Set([FORMAT_VERSION]));
    expect(new Set(formats)).toEqual(new Set([FORMAT_VERSION, EVENT_BATCH_FORMAT]));

    const sessions = await new Kvm(nc).open(buckets.sessions);
    const snapshot = await sessions.get("snapshot.stamped");
    expect(recordFormat(snapshot?.json())).toBe(FORMAT_VERSION);
    const turns = await new Kvm(nc).open(buckets.turns);
    const status = await turns.get(`stamped.${turn_id}`);
    expect(recordFormat(status?.json())).toBe(FORMAT_VERSION);
  });

  it("refuses a stored event of a newer format with format_too_new, and reads one without `v`", async () => {
    const nc = await nats.connect("runner");
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const count = await eventStreamCount(jsm);
    const base = {
      session_id: "older",
      turn_id: 1,
      ts_monotonic: 1,
      kind: "TURN_STAGE_CHANGED",
      payload: { stage: "ingest" },
    };
    // Written by 0.2.0: no `v`.
    await js.publish(subjects.turnEvents("older", 1, count), JSON.stringify({ ...base, seq: 0 }));
    const read = await readEvents(js, jsm, "older", 1);
    expect(read.map((event) => EngineEvent.parse(event).kind)).toEqual(["TURN_STAGE_CHANGED"]);

    await js.publish(
      subjects.turnEvents("newer", 1, count),
      JSON.stringify({ ...base, session_id: "newer", seq: 0, v: READ_FORMAT_VERSION + 1 }),
    );
    const refused = await readEvents(js, jsm, "newer", 1).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(FormatTooNewError);
    expect((refused as FormatTooNewError).code).toBe("format_too_new");
    expect((refused as Error).message).toMatch(/in format 3; this Conclave reads formats up to 2/);
  });

  it("refuses a KV value of a newer format without quarantining it, and reads one without `v`", async () => {
    const nc = await nats.connect("runner");
    const reported: string[] = [];
    const store = await JsonKv.open(nc, buckets.sessions, z.object({ ts: z.number() }), {
      onQuarantine: async (error) => {
        reported.push(error.message);
      },
    });
    await store.kv.put("probe.older", JSON.stringify({ ts: 5 }));
    expect((await store.get("probe.older"))?.value).toEqual({ ts: 5 });
    await store.kv.put("probe.newer", JSON.stringify({ ts: 5, v: READ_FORMAT_VERSION + 1 }));
    await expect(store.get("probe.newer")).rejects.toBeInstanceOf(FormatTooNewError);
    expect(reported).toEqual([]);
    await store.put("probe.written", { ts: 7 });
    expect(recordFormat((await store.kv.get("probe.written"))?.json())).toBe(FORMAT_VERSION);
  });

  it("answers a request of a newer format with format_too_new, and stamps its replies", async () => {
    const client = await nats.connect("client");
    const newer = headers();
    newer.set(FORMAT_HEADER, String(READ_FORMAT_VERSION + 1));
    const body = JSON.stringify({ text: "hello" });
    const refused = await client.request(subjects.turnSubmit("wire"), body, { timeout: 10_000, headers: newer });
    const reply = ErrorReply.parse(JSON.parse(decoder.decode(refused.data)));
    expect(reply.error.code).toBe("format_too_new");

    const answered = await client.request(subjects.turnSubmit("wire"), body, { timeout: 10_000 });
    expect(answered.headers?.get(FORMAT_HEADER)).toBe(String(FORMAT_VERSION));
    expect(JSON.parse(decoder.decode(answered.data))).toMatchObject({ session_id: "wire", turn_id: 1 });
  });

  it("leaves a newer-format WAL entry in the WAL: never run here, never dead-lettered", async () => {
    const nc = await nats.connect("runner");
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const entry = { v: READ_FORMAT_VERSION + 1, session_id: "future", turn_id: 1, text: "hi", on_busy: "enqueue" };
    const stored = await js.publish(
      subjects.walOf("future", DEFAULT_PARTITIONS),
      JSON.stringify({ ...entry, submitted_at: Date.now() }),
    );
    // Delivered, handed back, delivered again: the runner has seen it at least twice and kept it.
    const walStream = streams.turns;
    const partitionConsumer = runnerConsumer(partitionOf("future", DEFAULT_PARTITIONS));
    // The runner hands it back for 5 s (Settlement.leaveForNewer): the second delivery comes after that.
    await until(async () => (await jsm.consumers.info(walStream, partitionConsumer)).num_redelivered > 0, {
      timeoutMs: 30_000,
      everyMs: 100,
      what: "the newer-format WAL entry delivered a second time",
    });
    expect((await jsm.streams.getMessage(walStream, { seq: stored.seq }))?.seq).toBe(stored.seq);
    const letter = await jsm.streams
      .getMessage(streams.deadLetters, { last_by_subj: subjects.deadLetter("wal") })
      .catch(() => null);
    expect(letter ?? null).toBeNull();
  }, 45_000);
});
