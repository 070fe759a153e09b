import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { defineAgent } from "../../src/agents/defineAgent.ts";
import { NatsBlackboardStore } from "../../src/blackboard/natsStore.ts";
import { BLACKBOARD_BUCKET, buckets, eventStreamOf, streams, subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { EraseRecord } from "../../src/contracts/erase.ts";
import { isConclaveError } from "../../src/errors.ts";
import { DEFAULT_EVENT_STREAMS, eventStreamNames } from "../../src/eventlog/eventStreams.ts";
import { MIN_RETENTION_MS, retentionSettings } from "../../src/eventlog/retention.ts";
import { applyRetention } from "../../src/runtime/runner/retentionParts.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { SessionStore } from "../../src/runtime/sessionStore.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { settledStatus } from "../helpers/turnStatus.ts";
import { until } from "../helpers/wait.ts";
import { walSubject } from "../helpers/wal.ts";

const DAY = 86_400_000;
const NS = 1_000_000;
const SECRET = "pineapple-42";

const nats = useNatsServer();
let runner: Runner;
let worker: WorkerHandle;
let client: ConclaveClient;
let jsm: JetStreamManager;
let runnerNc: NatsConnection;
/** Reads the audit stream, as operators do (the observer role). */
let observerJsm: JetStreamManager;

/** Turns of the slow agent that started, by `<session>.<turn>`: each waits until its turn is cancelled. */
const started = new Map<string, () => void>();
const startedTurn = (session: string, turn: number) =>
  new Promise<void>((resolve) => started.set(`${session}.${turn}`, resolve));

const slow = defineAgent({
  name: "test.slow",
  description: "Waits until its turn is cancelled (or 20 s pass) when asked for something slow.",
  priority: "ALWAYS_ON",
  triggers: [],
  output: z.object({ waited: z.boolean() }),
  run: async ({ sessionId, turnId, signal, input }) => {
    if (!input.user_message.includes("slow")) return { waited: false };
    started.get(`${sessionId}.${turnId}`)?.();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 20_000);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return { waited: true };
  },
});

beforeAll(async () => {
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: [...builtinAgents("*"), slow],
    services: [...CORE_SERVICES],
  });
  runnerNc = await nats.connect("runner");
  runner = await Runner.start(runnerNc, {
    retention: { eventsMaxAgeMs: 7 * DAY, turnStatusesMaxAgeMs: 3 * DAY, episodesMaxAgeMs: 30 * DAY },
  });
  client = await connect({ nc: await nats.connect("client") });
  jsm = await jetstreamManager(runnerNc);
  observerJsm = await jetstreamManager(await nats.connect("observer"));
});

afterAll(async () => {
  await runner?.stop();
  await worker?.stop();
});

/** How many messages of `stream` are on subjects matching `filter` (0 for a stream that does not exist). */
async function stored(stream: string, filter: string): Promise<number> {
  const info = await jsm.streams.info(stream, { subjects_filter: filter }).catch(() => null);
  return Object.values(info?.state.subjects ?? {}).reduce((sum, count) => sum + count, 0);
}

/** Every key of every KV bucket that names the session (as a whole dot-separated token). */
async function keysOf(session: string): Promise<string[]> {
  const found: string[] = [];
  for (const bucket of [...Object.values(buckets), BLACKBOARD_BUCKET]) {
    const prefix = `$KV.${bucket}.`;
    const all = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: ">" }).catch(() => null);
    if (!all) continue;
    for (const subject of Object.keys(all.state.subjects ?? {})) {
      if (subject.slice(prefix.length).split(".").includes(session)) found.push(subject);
    }
  }
  return found.sort();
}

describe("retention", () => {
  it("sets the configured maximum ages on the event log, the turn statuses and the episodes at start", async () => {
    for (const stream of eventStreamNames(DEFAULT_EVENT_STREAMS))
      expect((await jsm.streams.info(stream)).config.max_age, stream).toBe(7 * DAY * NS);
    expect((await jsm.streams.info(`KV_${buckets.turns}`)).config.max_age).toBe(3 * DAY * NS);
    expect((await jsm.streams.info(streams.memory)).config.max_age).toBe(30 * DAY * NS);
  });

  it("brings existing streams to new limits, and leaves a store whose limit is unset as it is", async () => {
    await applyRetention(jsm, { eventsMaxAgeMs: 2 * DAY });
    for (const stream of eventStreamNames(DEFAULT_EVENT_STREAMS))
      expect((await jsm.streams.info(stream)).config.max_age, stream).toBe(2 * DAY * NS);
    expect((await jsm.streams.info(`KV_${buckets.turns}`)).config.max_age).toBe(3 * DAY * NS);
    await applyRetention(jsm, { eventsMaxAgeMs: 0 });
    expect((await jsm.streams.info(eventStreamNames(DEFAULT_EVENT_STREAMS)[2]!)).config.max_age).toBe(0);
    await applyRetention(jsm, { eventsMaxAgeMs: 7 * DAY });
  });

  it("reads durations from the environment and refuses ages that could cut a running turn short", () => {
    expect(retentionSettings({}, { CONCLAVE_RETAIN_EVENTS: "30d", CONCLAVE_RETAIN_EPISODES: "0" })).toEqual({
      eventsMaxAgeMs: 30 * DAY,
      episodesMaxAgeMs: 0,
    });
    expect(
      retentionSettings({ turnStatusesMaxAgeMs: MIN_RETENTION_MS }, { CONCLAVE_RETAIN_TURN_STATUSES: "1d" }),
    ).toEqual({ turnStatusesMaxAgeMs: MIN_RETENTION_MS });
    expect(() => retentionSettings({}, { CONCLAVE_RETAIN_EVENTS: "10m" })).toThrow(/at least 1 hour/);
    expect(() => retentionSettings({}, { CONCLAVE_RETAIN_EVENTS: "soon" })).toThrow(/CONCLAVE_RETAIN_EVENTS/);
  });
});

describe("erasing a session", () => {
  it("removes it from every stream and bucket, leaves other sessions, and keeps a content-free audit record", async () => {
    const sessions = await SessionStore.open(runnerNc);
    for (const text of [`remember: my secret is ${SECRET}`, "and I like tea"]) {
      await client.submit("erase-a", text).result;
    }
    await client.submit("erase-b", `my secret is ${SECRET} too`).result;
    await client.truth.upsertFact("erase-a", { statement: `the secret is ${SECRET}` });
    await client.truth.upsertFact("erase-b", { statement: `the secret is ${SECRET}` });
    const boards = await NatsBlackboardStore.open(runnerNc);
    await boards.save("erase-a", { secret: SECRET });
    await boards.save("erase-b", { secret: SECRET });
    expect(
      await stored(
        eventStreamOf("erase-a", DEFAULT_EVENT_STREAMS),
        subjects.sessionLog("erase-a", DEFAULT_EVENT_STREAMS),
      ),
    ).toBeGreaterThan(0);
    expect(await stored(streams.memory, "conclave.memory.episode.erase-a.*")).toBe(2);
    const before = await keysOf("erase-a");
    expect(before).toEqual(expect.arrayContaining(["$KV.conclave_turns.erase-a.1", "$KV.conclave_ledgers.erase-a"]));
    const bKeys = await keysOf("erase-b");
    const bEvents = await stored(
      eventStreamOf("erase-b", DEFAULT_EVENT_STREAMS),
      subjects.sessionLog("erase-b", DEFAULT_EVENT_STREAMS),
    );

    const record = await client.erase("erase-a", { requested_by: "dpo@example.com", reason: "GDPR art. 17" });

    expect(
      await stored(
        eventStreamOf("erase-a", DEFAULT_EVENT_STREAMS),
        subjects.sessionLog("erase-a", DEFAULT_EVENT_STREAMS),
      ),
    ).toBe(0);
    expect(await stored(streams.turns, walSubject("erase-a"))).toBe(0);
    expect(await stored(streams.memory, "conclave.memory.episode.erase-a.*")).toBe(0);
    // Kept on purpose: the turn counter (two integers and a flag: turn ids are never reused) and the ownership record
    // (a runner's name: deleting it under a live owner would let a second runner take the session).
    const ownership = `$KV.${buckets.owners}.erase-a`;
    expect(await keysOf("erase-a")).toEqual(
      [...(before.includes(ownership) ? [ownership] : []), "$KV.conclave_sessions.counter.erase-a"].sort(),
    );
    expect(await boards.load("erase-a")).toBeNull();
    expect(await client.turns("erase-a")).toEqual([]);
    expect((await client.truth.queryLedger("erase-a", { status: "all" })).length).toBe(0);
    // The other session is untouched.
    expect(await keysOf("erase-b")).toEqual(bKeys);
    expect(
      await stored(
        eventStreamOf("erase-b", DEFAULT_EVENT_STREAMS),
        subjects.sessionLog("erase-b", DEFAULT_EVENT_STREAMS),
      ),
    ).toBe(bEvents);
    expect(await boards.load("erase-b")).toEqual({ secret: SECRET });
    expect(await stored(streams.memory, "conclave.memory.episode.erase-b.*")).toBe(1);

    // The audit record: in its own stream, no content of the session.
    const audit = await observerJsm.streams.getMessage(streams.audit, { last_by_subj: subjects.auditErase("erase-a") });
    const kept = EraseRecord.parse(audit!.json());
    expect(kept).toEqual(record);
    expect(kept).toMatchObject({ session_id: "erase-a", requested_by: "dpo@example.com", cancelled_turns: [] });
    expect(kept.erased.events).toBeGreaterThan(0);
    expect(kept.erased.episodes).toBe(2);
    expect(kept.erased.turn_statuses).toBe(2);
    expect(kept.erased.blackboard).toBe(1);
    expect(kept.skipped).toEqual(["postgres_blackboard", "postgres_memory_graph", "redis_blackboard"]);
    expect(new TextDecoder().decode(audit!.data)).not.toMatch(/pineapple|tea|secret is/i);
    // Not erasable itself: the runner may not purge it, and the stream refuses purges anyway.
    await expect(jsm.streams.purge(streams.audit)).rejects.toThrow();
    expect((await observerJsm.streams.info(streams.audit)).config.deny_purge).toBe(true);

    // The session lives on afresh: turn ids go on from the kept counter.
    const next = await client.submit("erase-a", "hello again").result;
    expect(next.turnId).toBe(3);
    // And the runner forgot what it held of it in memory (its actor): the session counts one turn, not three.
    await until(async () => (await sessions.snapshot("erase-a"))?.last_turn_id === 3, { what: "snapshot saved" });
    expect((await sessions.snapshot("erase-a"))?.turns_completed).toBe(1);
  }, 60_000);

  it("cancels a turn in flight, waits for it to end, then erases", async () => {
    const running = startedTurn("erase-c", 1);
    const turn = client.submit("erase-c", "a slow one, please");
    turn.result.catch(() => {});
    await running;
    const record = await client.erase("erase-c");
    expect(record.cancelled_turns).toEqual([1]);
    expect(
      await stored(
        eventStreamOf("erase-c", DEFAULT_EVENT_STREAMS),
        subjects.sessionLog("erase-c", DEFAULT_EVENT_STREAMS),
      ),
    ).toBe(0);
    expect(await stored(streams.turns, walSubject("erase-c"))).toBe(0);
    expect(await client.turns("erase-c")).toEqual([]);
  }, 60_000);

  it("erases nothing when a cancelled turn does not end within the wait, and can be asked again", async () => {
    const running = startedTurn("erase-d", 1);
    client.submit("erase-d", "slow, please").result.catch(() => {});
    await running;
    const refused = await client.erase("erase-d", { wait_ms: 0 }).catch((error: unknown) => error);
    expect(isConclaveError(refused, "timeout")).toBe(true);
    expect(
      await stored(
        eventStreamOf("erase-d", DEFAULT_EVENT_STREAMS),
        subjects.sessionLog("erase-d", DEFAULT_EVENT_STREAMS),
      ),
    ).toBeGreaterThan(0);
    await settledStatus(runnerNc, "erase-d", 1);
    const record = await client.erase("erase-d");
    expect(record.cancelled_turns).toEqual([]);
    expect(
      await stored(
        eventStreamOf("erase-d", DEFAULT_EVENT_STREAMS),
        subjects.sessionLog("erase-d", DEFAULT_EVENT_STREAMS),
      ),
    ).toBe(0);
    // Both requests were answered; only the one that erased left an audit record.
    const audit = await observerJsm.streams.getMessage(streams.audit, { last_by_subj: subjects.auditErase("erase-d") });
    expect(EraseRecord.parse(audit!.json()).erased.events).toBeGreaterThan(0);
    const info = await observerJsm.streams.info(streams.audit, { subjects_filter: subjects.auditErase("erase-d") });
    expect(info.state.subjects).toEqual({ [subjects.auditErase("erase-d")]: 1 });
  }, 60_000);

  it("refuses a request that is not JSON of the right shape", async () => {
    const refused = await client.erase("erase-e", { wait_ms: -1 } as never).catch((error: unknown) => error);
    expect(isConclaveError(refused, "invalid_request")).toBe(true);
  });
});
