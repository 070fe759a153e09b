import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { NatsBlackboardStore } from "../../src/blackboard/natsStore.ts";
import { deadLetter } from "../../src/bus/deadLetters.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { EraseRequest } from "../../src/contracts/erase.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { sleep, until } from "../helpers/wait.ts";
import { walSubject } from "../helpers/wal.ts";

/** Strings that live only in the erased sessions: none may be left anywhere under the store directory. */
const CANARY = {
  turn: "canary-turn-7f3a91",
  schedule: "canary-schedule-c42e07",
  ledger: "canary-ledger-5d18b3",
  deadLetter: "canary-deadletter-9a6f24",
  blackboard: "canary-board-e1c550",
};
const SESSION = "disk-erase";
const FORK = "disk-erase-fork";
const EVERY_MS = 1_500;

const nats = useNatsServer();
let runner: Runner;
let worker: WorkerHandle;
let client: ConclaveClient;
let runnerNc: NatsConnection;

beforeAll(async () => {
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: [...builtinAgents("*")],
    services: [...CORE_SERVICES],
  });
  runnerNc = await nats.connect("runner");
  runner = await Runner.start(runnerNc);
  client = await connect({ nc: await nats.connect("client") });
});

afterAll(async () => {
  await runner?.stop();
  await worker?.stop();
});

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Which canaries appear, in which files of the JetStream store directory, read as bytes. */
function canariesOnDisk(): string[] {
  const found: string[] = [];
  for (const file of filesUnder(nats.storeDir)) {
    const bytes = readFileSync(file);
    for (const [store, canary] of Object.entries(CANARY))
      if (bytes.includes(Buffer.from(canary))) found.push(`${store} in ${file.slice(nats.storeDir.length)}`);
  }
  return found.sort();
}

describe("erasing a session reaches every copy and the disk", () => {
  it("leaves no canary in the store directory, and its schedule makes no turn after", async () => {
    // The session's content, one canary per store: turns (events, WAL, episodes, memory), a ledger, a
    // blackboard, a dead letter, a schedule (its log, and the turns it fires), and a fork holding a copy.
    await client.submit(SESSION, `remember: my code word is ${CANARY.turn}`).result;
    await client.truth.upsertFact(SESSION, { statement: `the vault code is ${CANARY.ledger}` });
    await (await NatsBlackboardStore.open(runnerNc)).save(SESSION, { note: CANARY.blackboard });
    const letter = new TextEncoder().encode(JSON.stringify({ session_id: SESSION, text: CANARY.deadLetter }));
    const refused = { subject: walSubject(SESSION), data: letter, code: "invalid_request", reason: "test" };
    expect(await deadLetter(jetstream(runnerNc), "wal", refused)).toBeNull();
    await client.fork({ session: SESSION, at: { turn: 1 }, as: FORK });
    await client.schedules.create({
      id: "disk-erase-every",
      session_id: SESSION,
      what: { text: `check on ${CANARY.schedule}` },
      when: { every_ms: EVERY_MS },
    });
    await until(async () => (await client.turns(SESSION)).length >= 2, { what: "the schedule's first turn" });
    expect(canariesOnDisk().length).toBeGreaterThanOrEqual(Object.keys(CANARY).length);
    const [schedule] = await client.schedules.list(SESSION);

    const record = await client.erase(SESSION, { with_forks: true, requested_by: "dpo-1" });

    expect(record.forks).toEqual([FORK]);
    expect(record.forks_erased).toBe(true);
    expect(record.erased.schedules).toBeGreaterThan(0);
    expect(record.erased.dead_letters).toBe(1);
    expect(record.acknowledged_by?.some((name) => name.startsWith("conclave-memory"))).toBe(true);
    expect(Object.keys(record.kept ?? {})).toEqual(
      expect.arrayContaining(["turn_counter", "audit_record", "superseded_revisions"]),
    );
    expect(await client.schedules.list(SESSION)).toEqual([]);

    // The schedule's next due time (as it stood before the erase) and the one after pass: no turn comes.
    const due = (schedule?.next_due ?? Date.now()) + EVERY_MS;
    await sleep(Math.max(0, due + 1_000 - Date.now()));
    expect(await client.turns(SESSION)).toEqual([]);
    expect(await client.turns(FORK)).toEqual([]);
    expect(canariesOnDisk()).toEqual([]);
  }, 90_000);

  it("refuses free text that is not printable on one line", () => {
    expect(EraseRequest.safeParse({ reason: "user asked\u001b[2J" }).success).toBe(false);
    expect(EraseRequest.safeParse({ requested_by: "a\u202eb" }).success).toBe(false);
    expect(EraseRequest.safeParse({ reason: "GDPR art. 17 — user request" }).success).toBe(true);
  });
});
