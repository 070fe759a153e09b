/**
 * Retention in PostgreSQL, which has no maximum age of its own: the memory
 * graph's store, given an age, sweeps its nodes older than it (edges go by
 * the cascade) and leaves them out of reads meanwhile; the blackboards'
 * store deletes the rows not saved within the age. A real server; waits
 * poll the table until the row is gone, bounded.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresBlackboardStore } from "../../src/blackboard/postgresStore.ts";
import { openMemoryGraph } from "../../src/memory/graph/open.ts";
import { usePostgresServer } from "../helpers/postgres.ts";
import { until } from "../helpers/wait.ts";

const postgres = usePostgresServer();
let pool: pg.Pool;

beforeAll(() => {
  pool = new pg.Pool({ connectionString: postgres.url, max: 2 });
});
afterAll(async () => {
  await pool.end();
});

const CANARY = "zqpgcanaryx";

/** Rows of `table` whose text holds the canary. */
async function rowsWithCanary(table: string): Promise<number> {
  const result = await pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${table}::text LIKE $1`, [
    `%${CANARY}%`,
  ]);
  return result.rows[0].n;
}

describe("retention in PostgreSQL", () => {
  it("the memory graph's store sweeps nodes past its age, with their edges, and reads leave them out", async () => {
    const store = await openMemoryGraph({ backend: "postgres", postgresUrl: postgres.url, maxAgeMs: 2_000 });
    try {
      const session = "pg-retention";
      await store.upsertNode({ id: "fact.city", session_id: session, kind: "semantic", text: `lives in ${CANARY}` });
      await store.upsertNode({ id: "episode.1", session_id: session, kind: "episodic", text: `I live in ${CANARY}` });
      await store.addEdge({ from: "episode.1", to: "fact.city", kind: "mentions", session_id: session });
      expect((await store.nodes(session)).map((node) => node.id)).toEqual(["episode.1", "fact.city"]);

      await until(async () => (await rowsWithCanary("conclave_memory_nodes")) === 0, {
        what: "the canary's nodes swept",
        timeoutMs: 20_000,
        everyMs: 200,
      });
      const edges = await pool.query("SELECT count(*)::int AS n FROM conclave_memory_edges WHERE session_id = $1", [
        session,
      ]);
      expect(edges.rows[0].n).toBe(0);
      expect(await store.nodes(session)).toEqual([]);
      expect(await store.edges(session)).toEqual([]);
      // What is written afterwards is read as usual.
      await store.upsertNode({ id: "fact.pet", session_id: session, kind: "semantic", text: "has a cat" });
      expect((await store.nodes(session)).map((node) => node.text)).toEqual(["has a cat"]);
    } finally {
      await store.close();
    }
  });

  it("the blackboards' store deletes the rows not saved within the age, and only those", async () => {
    const store = await PostgresBlackboardStore.open(postgres.url);
    try {
      await store.save("pg-board-old", { note: CANARY });
      expect(await store.sweep(new Date(Date.now() - 60_000))).toBe(0);
      await store.save("pg-board-new", { note: "fresh" });
      // The row's own clock (the server's now()) decides: swept once it is older than a second.
      await until(
        async () => {
          await store.sweep(new Date(Date.now() - 1_000), 1);
          return (await rowsWithCanary("conclave_blackboards")) === 0;
        },
        { what: "the old blackboard swept", timeoutMs: 20_000, everyMs: 200 },
      );
      expect(await store.load("pg-board-old")).toBeNull();
      // One row a sweep, oldest first: the later one is still there.
      expect(await store.load("pg-board-new")).toEqual({ note: "fresh" });
    } finally {
      await store.close();
    }
  });
});
