/**
 * Erase with the memory worker on the PostgreSQL backend (issue 41): the runner has no
 * PostgreSQL setting (the memory backend is the worker's), so the worker itself must
 * delete the session's rows when told of the erase, and drop its in-memory copy. After
 * it, memory search finds nothing of the erased fact, no table of the backend's schema
 * holds it, and the next turn of the session does not retrieve it.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { escapeIdentifier, Pool } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { retrievedOf } from "../helpers/memoryRefs.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { usePostgresServer } from "../helpers/postgres.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

/** Lives only in the erased session: what the offline extractor learns from "I live in <it>". */
const CANARY = "zorbavale7f3a91";
const SESSION = "pg-erase";
const OTHER = "pg-erase-other";
const SCHEMA = "public";

const nats = useNatsServer();
const postgres = usePostgresServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;
/** Asks the memory service what a turn's references name, as a runner does on a takeover. */
let runner: NatsConnection;
let db: Pool;

beforeAll(async () => {
  const memoryOnPostgres = { CONCLAVE_MEMORY_BACKEND: "postgres", CONCLAVE_POSTGRES_URL: postgres.url };
  await Promise.all([
    processes.spawn(
      "worker",
      ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"],
      memoryOnPostgres,
    ),
    // The runner is not told of PostgreSQL: its erase skips the backend, the worker's must not.
    processes.spawn("runner", ["runner"]),
  ]);
  client = await connect({ nc: await nats.connect("client") });
  runner = await nats.connect("runner");
  db = new Pool({ connectionString: postgres.url, max: 2 });
});

afterAll(async () => {
  await db?.end();
});

/** Every row of every table of the backend's schema, as text, that holds the canary: `<table>: <row>`. */
async function canaryRows(): Promise<string[]> {
  const tables = await db.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1",
    [SCHEMA],
  );
  expect(tables.rows.map((row) => row.table_name)).toEqual(
    expect.arrayContaining(["conclave_memory_edges", "conclave_memory_nodes"]),
  );
  const found: string[] = [];
  for (const { table_name: table } of tables.rows) {
    const name = `${escapeIdentifier(SCHEMA)}.${escapeIdentifier(table)}`;
    const rows = await db.query<{ row: string }>(`SELECT t::text AS row FROM ${name} t`);
    for (const { row } of rows.rows) if (row.toLowerCase().includes(CANARY)) found.push(`${table}: ${row}`);
  }
  return found;
}

/**
 * A turn of the session: its events and what its memory retrieval gave, as text. The log keeps the
 * retrieval by reference (issue 41), so what it gave is read back through the memory service.
 */
async function turn(session: string, text: string): Promise<string> {
  const events: EngineEvent[] = [];
  const submitted = client.submit(session, text);
  for await (const event of submitted) events.push(event);
  expect((await submitted.result).outcome.status).toBe("Complete");
  const retrieved = events.some((event) => event.kind === "MEMORY_RETRIEVED")
    ? await retrievedOf(runner, events)
    : null;
  return JSON.stringify({ events, retrieved }).toLowerCase();
}

const texts = (items: { text: string }[]) => items.map((item) => item.text.toLowerCase()).join("\n");

describe("erasing a session whose memory is in PostgreSQL", () => {
  it("deletes its rows and the worker's copy: search, the tables and the next turn hold no canary", async () => {
    await turn(SESSION, `I live in ${CANARY}.`);
    await turn(OTHER, "I live in Lisbon.");
    // Before: the fact is learnt, in the worker's copy and in the backend's rows, and a turn retrieves it.
    expect(texts(await client.memory.search(SESSION, `home ${CANARY}`))).toContain(CANARY);
    expect((await canaryRows()).length).toBeGreaterThan(0);
    expect(await turn(SESSION, "Where is home for me?")).toContain(CANARY);

    const record = await client.erase(SESSION, { requested_by: "dpo-1" });

    expect(record.skipped).toContain("postgres_memory_graph");
    expect(record.acknowledged_by?.some((name) => name.startsWith("conclave-memory"))).toBe(true);
    expect(texts(await client.memory.search(SESSION, `home ${CANARY}`))).not.toContain(CANARY);
    expect(await canaryRows()).toEqual([]);
    expect(await turn(SESSION, "Where is home for me?")).not.toContain(CANARY);
    // The next turn's commit wrote no canary back, and the other session's memory is untouched.
    expect(await canaryRows()).toEqual([]);
    expect(texts(await client.memory.search(OTHER, "home Lisbon"))).toContain("lisbon");
  }, 90_000);
});
