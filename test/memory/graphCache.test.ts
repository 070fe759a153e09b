/**
 * The memory graph's sessions in memory (issue 42): a session dropped from a
 * NATS store's cache stops following and leaves no consumer on the server;
 * how many sessions a store keeps is CONCLAVE_MEMORY_GRAPH_SESSIONS, and a
 * session unused for the idle time is dropped.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { CONFIG_SCHEMA } from "../../src/config/schema.ts";
import { isConclaveError } from "../../src/errors.ts";
import { MEMORY_GRAPH_BUCKET } from "../../src/memory/graph/natsGraphKeys.ts";
import { NatsMemoryGraphStore } from "../../src/memory/graph/natsGraphStore.ts";
import { openMemoryGraph } from "../../src/memory/graph/open.ts";
import { SessionCache } from "../../src/memory/graph/sessionGraph.ts";
import { DEFAULT_MEMORY_GRAPH_SESSIONS } from "../../src/memory/graph/store.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();
let observer: NatsConnection;

beforeAll(async () => {
  observer = await nats.connect("observer");
  // The bucket exists before counting (opening a store creates it).
  await (await NatsMemoryGraphStore.open(await nats.connect("worker"))).close();
});

/** The consumers on the memory graph's stream now. */
async function graphConsumers(): Promise<number> {
  const jsm = await jetstreamManager(observer);
  return (await jsm.streams.info(`KV_${MEMORY_GRAPH_BUCKET}`)).state.consumer_count;
}

const note = (sessionId: string) => ({ id: "n1", session_id: sessionId, kind: "semantic" as const, text: "a note" });

describe("nats memory graph: sessions dropped from memory", () => {
  it("deletes the consumer of a session dropped from the cache", async () => {
    const before = await graphConsumers();
    const store = await NatsMemoryGraphStore.open(await nats.connect("worker"), { maxSessions: 1 });
    try {
      await store.upsertNode(note("cache-a"));
      expect(await graphConsumers()).toBe(before + 1);
      // Loading a second session drops the first (at most one kept): its follow stops.
      expect(await store.nodes("cache-b")).toEqual([]);
      await store.settled();
      expect(await graphConsumers()).toBe(before + 1);
      // Dropped, not lost: the next use loads it again from the bucket.
      expect((await store.node("cache-a", "n1"))?.text).toBe("a note");
      await store.settled();
      expect(await graphConsumers()).toBe(before + 1);
    } finally {
      await store.close();
    }
    expect(await graphConsumers()).toBe(before);
  });
});

describe("CONCLAVE_MEMORY_GRAPH_SESSIONS", () => {
  it("defaults to DEFAULT_MEMORY_GRAPH_SESSIONS", () => {
    expect(CONFIG_SCHEMA.CONCLAVE_MEMORY_GRAPH_SESSIONS.default).toBe(DEFAULT_MEMORY_GRAPH_SESSIONS);
  });

  it("bounds the sessions a store opened by openMemoryGraph keeps", async () => {
    const before = await graphConsumers();
    const env = { CONCLAVE_MEMORY_GRAPH_SESSIONS: "2" };
    const store = (await openMemoryGraph({ nc: await nats.connect("worker"), env })) as NatsMemoryGraphStore;
    try {
      for (const session of ["bound-a", "bound-b", "bound-c", "bound-d"]) await store.nodes(session);
      await store.settled();
      expect(await graphConsumers()).toBe(before + 2);
    } finally {
      await store.close();
    }
  });

  it("refuses a value that is not a whole number from 1, in one line naming it", async () => {
    const nc = await nats.connect("worker");
    for (const value of ["0", "-3", "many"]) {
      const error = await openMemoryGraph({ nc, env: { CONCLAVE_MEMORY_GRAPH_SESSIONS: value } }).then(
        () => null,
        (failure: unknown) => failure,
      );
      expect(isConclaveError(error) && error.code).toBe("config");
      expect(String((error as Error).message)).toMatch(/^CONCLAVE_MEMORY_GRAPH_SESSIONS.*whole number from 1/);
    }
  });
});

describe("SessionCache", () => {
  it("drops the sessions unused for the idle time at its next use, and the least recently used past its most", async () => {
    let now = 0;
    const dropped: string[] = [];
    const cache = new SessionCache(
      3,
      async (sessionId: string) => sessionId,
      (sessionId) => {
        dropped.push(sessionId);
      },
      { idleMs: 1_000, now: () => now },
    );
    await cache.get("a");
    await cache.get("b");
    now = 900;
    await cache.get("a"); // used again: b is now the least recently used
    await cache.get("c");
    await cache.get("d"); // past three: b goes
    await cache.settled();
    expect(dropped).toEqual(["b"]);
    now = 1_950; // a, c and d were last used at 900: idle for 1 050 ms
    await cache.get("e");
    await cache.settled();
    expect(dropped.sort()).toEqual(["a", "b", "c", "d"]);
    expect(cache.size).toBe(1);
  });
});
