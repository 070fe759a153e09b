/**
 * The blackboard stores against real servers: one nats-server, one
 * redis-server and one PostgreSQL for the file, each backend held to the same
 * contract (round trips, restarts, corrupt values, size limit, dead servers).
 */
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import pg from "pg";
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { NatsBlackboardStore } from "../../src/blackboard/natsStore.ts";
import { BlackboardStores, blackboardOptionsFromEnv, openBlackboardStore } from "../../src/blackboard/open.ts";
import { POSTGRES_BLACKBOARD_TABLE, PostgresBlackboardStore } from "../../src/blackboard/postgresStore.ts";
import { REDIS_BLACKBOARD_PREFIX, RedisBlackboardStore } from "../../src/blackboard/redisStore.ts";
import {
  type BlackboardBackend,
  type BlackboardStore,
  BlackboardStoreError,
  MAX_BLACKBOARD_BYTES,
} from "../../src/blackboard/store.ts";
import { BLACKBOARD_BUCKET } from "../../src/bus/subjects.ts";
import { isConclaveError } from "../../src/errors.ts";
import { freePort } from "../../src/nats/server.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { usePostgresServer } from "../helpers/postgres.ts";
import { useRedisServer } from "../helpers/redis.ts";

/** One nats-server on the repo's nats.conf: the runner's own grants (conclave_blackboards among them) are what is tested. */
const nats = useNatsServer();
const redis = useRedisServer();
const postgres = usePostgresServer();

/** Short, so the dead-server tests stay fast; still far above any healthy local call. */
const TIMEOUT_MS = 1_500;

/** What the contract needs of each backend besides the store itself. */
interface Backend {
  name: BlackboardBackend;
  /** A new store (a new connection) on the running server. */
  open(): Promise<BlackboardStore>;
  /** Stores a raw value under the session's key, bypassing the store's checks. */
  writeRaw(sessionId: string, raw: string): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
  /** Whether a store opened before a server restart works again after it (its own reconnection). */
  reconnects: boolean;
}

/** A runner's connection; a new one per store, so a store opened after a restart has a live one. */
const runnerConnection = (): Promise<NatsConnection> => nats.connect("runner");

const backends: Backend[] = [
  {
    name: "nats",
    open: async () => NatsBlackboardStore.open(await runnerConnection(), { timeoutMs: TIMEOUT_MS }),
    async writeRaw(sessionId, raw) {
      const kv = await new Kvm(await runnerConnection()).open(BLACKBOARD_BUCKET);
      await kv.put(sessionId, raw);
    },
    restart: () => nats.restart(),
    // A second stop (restart does one) finds it stopped already.
    stop: () => nats.server.stop(),
    // The connection is the runner's, and reconnecting it is the runner's business.
    reconnects: false,
  },
  {
    name: "redis",
    open: () => RedisBlackboardStore.open(redis.url, { timeoutMs: TIMEOUT_MS }),
    async writeRaw(sessionId, raw) {
      const client = createClient({ url: redis.url });
      await client.connect();
      try {
        await client.set(REDIS_BLACKBOARD_PREFIX + sessionId, raw);
      } finally {
        client.destroy();
      }
    },
    restart: () => redis.restart(),
    stop: () => redis.stop(),
    reconnects: true,
  },
  {
    name: "postgres",
    open: () => PostgresBlackboardStore.open(postgres.url, { timeoutMs: TIMEOUT_MS }),
    async writeRaw(sessionId, raw) {
      const client = new pg.Client({ connectionString: postgres.url });
      await client.connect();
      try {
        await client.query(
          `INSERT INTO ${POSTGRES_BLACKBOARD_TABLE} (session_id, blackboard) VALUES ($1, $2::jsonb)
           ON CONFLICT (session_id) DO UPDATE SET blackboard = excluded.blackboard`,
          [sessionId, raw],
        );
      } finally {
        await client.end();
      }
    },
    restart: () => postgres.restart(),
    stop: () => postgres.stop(),
    reconnects: true,
  },
];

/** The rejection of `work`, which must come (the test synchronises on it) and be a BlackboardStoreError. */
async function rejection(work: Promise<unknown>): Promise<BlackboardStoreError> {
  const error = await work.then(
    () => expect.fail("expected the call to fail"),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(BlackboardStoreError);
  return error as BlackboardStoreError;
}

const NESTED = {
  title: "Zürich → 東京 🚄",
  steps: [1, 2.5, -3e-7, 0, null, true, 'quoted "text" and \\ back', { deep: { deeper: ["∑", "é"] } }],
  counts: { rows: 12_345, ratio: 0.1 + 0.2, big: Number.MAX_SAFE_INTEGER },
  empty: { list: [], object: {} },
  "key with spaces and ünïcödé": "ok",
};

for (const backend of backends) {
  describe(`${backend.name} blackboard store`, () => {
    const session = (name: string) => `${backend.name}-${name}`;

    it("loads null for a session that has no blackboard yet", async () => {
      const store = await backend.open();
      expect(store.backend).toBe(backend.name);
      expect(await store.load(session("unknown"))).toBeNull();
      await store.close();
    });

    it("round-trips nested JSON: unicode, arrays, numbers", async () => {
      const store = await backend.open();
      await store.save(session("roundtrip"), NESTED);
      expect(await store.load(session("roundtrip"))).toEqual(NESTED);
      await store.close();
    });

    it("replaces the whole blackboard on save", async () => {
      const store = await backend.open();
      await store.save(session("overwrite"), { a: 1, b: { c: 2 } });
      await store.save(session("overwrite"), { d: [3] });
      expect(await store.load(session("overwrite"))).toEqual({ d: [3] });
      await store.close();
    });

    it("keeps sessions apart", async () => {
      const store = await backend.open();
      await store.save(session("one"), { who: "one" });
      await store.save(session("two"), { who: "two" });
      await store.save(session("one"), { who: "one", again: true });
      expect(await store.load(session("one"))).toEqual({ who: "one", again: true });
      expect(await store.load(session("two"))).toEqual({ who: "two" });
      await store.close();
    });

    it("fails the read of a stored value that is not a JSON object with corrupt_value, and reads other sessions on", async () => {
      const store = await backend.open();
      await store.save(session("healthy"), { fine: true });
      await backend.writeRaw(session("corrupt-array"), "[1, 2, 3]");
      await backend.writeRaw(session("corrupt-string"), '"just a string"');
      for (const corrupt of ["corrupt-array", "corrupt-string"]) {
        const error = await rejection(store.load(session(corrupt)));
        expect(error.code).toBe("corrupt_value");
        expect(error.message).toContain(backend.name);
        expect(error.message).toContain(session(corrupt));
        expect(error.message).not.toContain("\n");
      }
      if (backend.name !== "postgres") {
        // jsonb cannot hold text that is not JSON; the other two can.
        await backend.writeRaw(session("corrupt-text"), "{not json");
        expect((await rejection(store.load(session("corrupt-text")))).code).toBe("corrupt_value");
      }
      expect(await store.load(session("healthy"))).toEqual({ fine: true });
      await store.close();
    });

    it(`refuses a blackboard over ${MAX_BLACKBOARD_BYTES} bytes and keeps the one stored`, async () => {
      const store = await backend.open();
      await store.save(session("big"), { small: true });
      const error = await rejection(store.save(session("big"), { blob: "x".repeat(MAX_BLACKBOARD_BYTES) }));
      expect(error.code).toBe("payload_too_large");
      expect(error.message).toMatch(
        new RegExp(`^${backend.name} blackboard of session ${session("big")} is \\d+ bytes`),
      );
      expect(await store.load(session("big"))).toEqual({ small: true });
      // Just under the limit is fine (multi-byte characters counted as bytes).
      const under = { blob: "é".repeat((MAX_BLACKBOARD_BYTES - 100) / 2) };
      await store.save(session("big"), under);
      expect(await store.load(session("big"))).toEqual(under);
      await store.close();
    });

    it("refuses what is not a JSON object, and bad session ids", async () => {
      const store = await backend.open();
      const notObject = [1, 2] as unknown as Record<string, unknown>;
      expect((await rejection(store.save(session("array"), notObject))).code).toBe("invalid_request");
      expect((await rejection(store.load("not a session.id"))).code).toBe("invalid_request");
      expect((await rejection(store.save("a.b", {}))).code).toBe("invalid_request");
      await store.close();
    });

    it("keeps a blackboard across a server restart: a new store reads it", async () => {
      const before = await backend.open();
      await before.save(session("durable"), NESTED);
      await before.close();
      await backend.restart();
      const after = await backend.open();
      expect(await after.load(session("durable"))).toEqual(NESTED);
      await after.close();
    });

    it("fails calls on a dead server with one unavailable line, soon, and recovers when it returns", async () => {
      const store = await backend.open();
      await store.save(session("outage"), { kept: 1 });
      await backend.stop();
      const started = Date.now();
      const error = await rejection(store.load(session("outage")));
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 2_000);
      expect(error.code).toBe("unavailable");
      expect(error.backend).toBe(backend.name);
      expect(error.message).toMatch(new RegExp(`^${backend.name} blackboard `));
      expect(error.message).not.toContain("\n");
      expect((await rejection(store.save(session("outage"), { kept: 2 }))).code).toBe("unavailable");
      await backend.restart();
      if (backend.reconnects) expect(await store.load(session("outage"))).toEqual({ kept: 1 });
      await store.close();
      const fresh = await backend.open();
      expect(await fresh.load(session("outage"))).toEqual({ kept: 1 });
      await fresh.close();
    });
  });
}

describe("backend differences", () => {
  it("redis: a key holding another kind of value (a hash) reads as corrupt_value", async () => {
    const client = createClient({ url: redis.url });
    await client.connect();
    await client.hSet(`${REDIS_BLACKBOARD_PREFIX}redis-hash`, { a: "1" });
    client.destroy();
    const store = await RedisBlackboardStore.open(redis.url, { timeoutMs: TIMEOUT_MS });
    const error = await rejection(store.load("redis-hash"));
    expect(error.code).toBe("corrupt_value");
    expect(error.message).toContain("redis-hash");
    await store.close();
  });

  it("a NUL character: NATS and Redis keep it, PostgreSQL's jsonb refuses it (invalid_request)", async () => {
    const blackboard = { text: "before\u0000after" };
    for (const store of [
      await NatsBlackboardStore.open(await runnerConnection(), { timeoutMs: TIMEOUT_MS }),
      await RedisBlackboardStore.open(redis.url, { timeoutMs: TIMEOUT_MS }),
    ]) {
      await store.save("nul", blackboard);
      expect(await store.load("nul")).toEqual(blackboard);
      await store.close();
    }
    const store = await PostgresBlackboardStore.open(postgres.url, { timeoutMs: TIMEOUT_MS });
    const error = await rejection(store.save("nul", blackboard));
    expect(error.code).toBe("invalid_request");
    expect(error.message).toMatch(
      /^postgres blackboard save of session nul on postgres:\/\/conclave@127\.0\.0\.1:\d+\/postgres failed: /,
    );
    expect(await store.load("nul")).toBeNull();
    await store.close();
  });
});

describe("postgres table creation", () => {
  it("is safe when several runners open stores on a new database at once", async () => {
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query("CREATE DATABASE blackboard_race");
    await admin.end();
    const url = postgres.url.replace(/\/postgres$/, "/blackboard_race");
    const stores = await Promise.all(
      Array.from({ length: 6 }, () => PostgresBlackboardStore.open(url, { timeoutMs: 10_000 })),
    );
    await stores[0]!.save("race", { winner: 0 });
    expect(await stores[5]!.load("race")).toEqual({ winner: 0 });
    await Promise.all(stores.map((store) => store.close()));
  });
});

describe("stores pointed at a dead port", () => {
  for (const [name, open, scheme] of [
    ["redis", (url: string) => RedisBlackboardStore.open(url, { timeoutMs: TIMEOUT_MS }), "redis"],
    ["postgres", (url: string) => PostgresBlackboardStore.open(url, { timeoutMs: TIMEOUT_MS }), "postgres"],
  ] as const) {
    it(`${name}: open rejects with one unavailable line that does not print the password`, async () => {
      const port = await freePort();
      const started = Date.now();
      const error = await rejection(open(`${scheme}://conclave:s3cr%40t-pw@127.0.0.1:${port}/0`));
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 2_000);
      expect(error.code).toBe("unavailable");
      expect(error.message).toMatch(new RegExp(`^${name} blackboard `));
      expect(error.message).toContain(`127.0.0.1:${port}`);
      expect(error.message).not.toMatch(/s3cr|\n/);
    });
  }
});

describe("openBlackboardStore", () => {
  it("refuses redis and postgres with a config error when this runner has no URL for them", async () => {
    const redisError = await openBlackboardStore("redis", {}).catch((error: unknown) => error);
    expect(isConclaveError(redisError, "config")).toBe(true);
    expect((redisError as Error).message).toBe(
      "recipe asks for redis persistence, but this runner has no Redis configured: set CONCLAVE_REDIS_URL or the runner option blackboard.redisUrl",
    );
    const postgresError = await openBlackboardStore("postgres", { redisUrl: redis.url }).catch(
      (error: unknown) => error,
    );
    expect(isConclaveError(postgresError, "config")).toBe(true);
    expect((postgresError as Error).message).toContain("CONCLAVE_POSTGRES_URL");
    const natsError = await openBlackboardStore("nats", {}).catch((error: unknown) => error);
    expect(isConclaveError(natsError, "config")).toBe(true);
  });

  it("refuses a URL of the wrong kind with a config error that hides its password", async () => {
    const error = await openBlackboardStore("redis", { redisUrl: "http://me:hunter2@example.com" }).catch(
      (reason: unknown) => reason,
    );
    expect(isConclaveError(error, "config")).toBe(true);
    expect((error as Error).message).not.toContain("hunter2");
  });

  it("reads the URLs from CONCLAVE_REDIS_URL and CONCLAVE_POSTGRES_URL (empty counts as unset)", () => {
    expect(blackboardOptionsFromEnv({ CONCLAVE_REDIS_URL: "redis://r:1", CONCLAVE_POSTGRES_URL: "" })).toEqual({
      redisUrl: "redis://r:1",
    });
    expect(blackboardOptionsFromEnv({ CONCLAVE_POSTGRES_URL: "postgres://p/db" })).toEqual({
      postgresUrl: "postgres://p/db",
    });
  });
});

describe("BlackboardStores", () => {
  it("opens each backend on first use, shares it, retries one that failed, and closes them all", async () => {
    const stores = new BlackboardStores({
      nc: await runnerConnection(),
      redisUrl: redis.url,
      postgresUrl: `postgres://conclave@127.0.0.1:${await freePort()}/postgres`,
      timeoutMs: TIMEOUT_MS,
    });
    const first = await stores.get("redis");
    expect(await stores.get("redis")).toBe(first);
    expect((await stores.get("nats")).backend).toBe("nats");
    await expect(stores.get("postgres")).rejects.toThrow(BlackboardStoreError);
    // Not cached: the next recipe asking tries again (and fails again, the port being dead).
    await expect(stores.get("postgres")).rejects.toThrow(/^postgres blackboard /);
    await first.save("shared", { via: "stores" });
    await stores.close();
    expect((await rejection(first.load("shared"))).code).toBe("unavailable");
    await expect(stores.get("redis")).rejects.toThrow(/closed/);
  });
});
