/**
 * The truth and task ledgers on a real nats-server, through the client API
 * and the CLI: changes stored as events on the session's log, folded from it
 * (the same after a restart of every process and of nats-server, and with
 * the projection gone), decided one at a time under concurrent writers on two
 * runners, refused with a clear error when they cannot apply, and given to
 * agents in their context.
 */
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { beforeAll, describe, expect, it } from "vitest";
import { encodeJson } from "../../src/bus/codec.ts";
import { buckets, eventStreamOf, subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect, type Ledgers } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { LedgerEvent } from "../../src/contracts/ledger.ts";
import { isConclaveError } from "../../src/errors.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { runConclave } from "../helpers/cli.ts";
import { retrievedOf } from "../helpers/memoryRefs.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;
let running: ConclaveProcess[] = [];

async function startAll(generation: number): Promise<void> {
  running = await Promise.all([
    processes.spawn(`worker-${generation}`, [
      "worker",
      "--agents",
      "*",
      "--services",
      "scheduler,council,critics,memory",
    ]),
    processes.spawn(`reader-${generation}`, ["worker", "--agents", "./test/fixtures/ledgers/agents.ts"]),
    processes.spawn(`runner-a-${generation}`, ["runner"]),
    processes.spawn(`runner-b-${generation}`, ["runner"]),
  ]);
}

beforeAll(async () => {
  await startAll(1);
  client = await connect({ nc: await nats.connect("client") });
});

/** The code a rejected call carries (`undefined` when it did not reject). */
async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return isConclaveError(error) ? error.code : `not a ConclaveError: ${String(error)}`;
  }
}

/** The session's ledger events as stored on the log, read with the runner's rights. */
async function storedLedgerEvents(session: string): Promise<LedgerEvent[]> {
  const nc = await nats.connect("runner");
  const count = await eventStreamCount(nc);
  const consumer = await jetstream(nc).consumers.get(eventStreamOf(session, count), {
    filter_subjects: subjects.ledgerEvents(session, count),
  });
  const events: LedgerEvent[] = [];
  const messages = await consumer.consume();
  for await (const msg of messages) {
    events.push(LedgerEvent.parse(msg.json()));
    if (msg.info.pending === 0) break;
  }
  await messages.stop();
  return events;
}

const SESSION = "ledgers-1";
let before: Ledgers;

describe("the truth and task ledgers", () => {
  it("record facts with evidence and a task's spec, items and blockers, each change an event on the log", async () => {
    await client.task.setSpec(SESSION, { goal: "Move the billing API to v2", acceptance: ["all clients on v2"] });
    const tests = await client.task.addItem(SESSION, { title: "Write the contract tests" });
    const cutover = await client.task.addItem(SESSION, { id: "cutover", title: "Switch traffic", status: "todo" });
    expect(tests).toMatchObject({ status: "todo", notes: [], by: "user" });
    expect(tests.id).toMatch(/^item-[0-9a-f]{12}$/);

    // The same item again (its id derives from the title): nothing new is stored.
    expect(await client.task.addItem(SESSION, { title: "write the contract tests." })).toEqual(tests);

    const doing = await client.task.updateItem(
      SESSION,
      { id: tests.id, status: "doing", note: "half of the endpoints covered" },
      { userId: "ana" },
    );
    expect(doing).toMatchObject({ status: "doing", notes: ["half of the endpoints covered"], by: "user:ana" });
    const blocker = await client.task.recordBlocker(SESSION, { message: "No staging key yet", item_id: cutover.id });
    expect(blocker).toMatchObject({ status: "open", item_id: "cutover" });

    const fact = await client.truth.upsertFact(SESSION, {
      statement: "The v1 API is retired on 1 March",
      evidence: ["email from the platform team"],
      confidence: 0.8,
    });
    // The same statement with more evidence updates that fact: one fact, both pieces of evidence.
    const again = await client.truth.upsertFact(SESSION, {
      statement: "the v1 API is retired on 1 March",
      evidence: ["status page"],
    });
    expect(again.id).toBe(fact.id);
    expect(again.evidence).toEqual(["email from the platform team", "status page"]);
    expect(again.confidence).toBe(0.8);
    await client.truth.upsertFact(SESSION, { statement: "Clients call the API through the gateway" });
    const wrong = await client.truth.upsertFact(SESSION, { id: "rate", statement: "The rate limit is 10 rps" });
    const resolved = await client.truth.resolveFact(SESSION, wrong.id, { resolution: "it is 50 rps" });
    expect(resolved).toMatchObject({ status: "resolved", resolution: "it is 50 rps" });
    // Resolving twice changes nothing.
    expect(await client.truth.resolveFact(SESSION, wrong.id)).toEqual(resolved);

    const kinds = (await storedLedgerEvents(SESSION)).map((event) => event.kind);
    expect(kinds).toEqual([
      "TASK_SPEC_SET",
      "TASK_ITEM_ADDED",
      "TASK_ITEM_ADDED",
      "TASK_ITEM_UPDATED",
      "TASK_BLOCKER_RECORDED",
      "TRUTH_FACT_UPSERTED",
      "TRUTH_FACT_UPSERTED",
      "TRUTH_FACT_UPSERTED",
      "TRUTH_FACT_UPSERTED",
      "TRUTH_FACT_RESOLVED",
    ]);

    const active = await client.truth.queryLedger(SESSION, { text: "when is v1 retired?" });
    expect(active.map((item) => item.id)).toEqual([fact.id]);
    expect((await client.truth.queryLedger(SESSION, { status: "resolved" })).map((item) => item.id)).toEqual(["rate"]);
    const digest = await client.truth.getLedgerDigest(SESSION);
    expect(digest.facts).toEqual(["Clients call the API through the gateway", "the v1 API is retired on 1 March"]);
    expect(digest.task).toEqual({
      goal: "Move the billing API to v2",
      open_items: ["[doing] Write the contract tests", "[todo] Switch traffic"],
      open_blockers: ["No staging key yet"],
    });
    expect(digest.counts).toEqual({
      facts_active: 2,
      facts_resolved: 1,
      items_open: 2,
      items_done: 0,
      blockers_open: 1,
    });
  });

  it("are in every agent's context: the turn's MEMORY_RETRIEVED and an agent of a user's own see the digest", async () => {
    const events: EngineEvent[] = [];
    for await (const event of client.submit(SESSION, "What is left before the cutover?")) events.push(event);
    // The log notes that the digest was given (read from the ledgers), not its text; the agent shows what it held.
    const retrieved = events.find((event) => event.kind === "MEMORY_RETRIEVED");
    expect(retrieved?.kind === "MEMORY_RETRIEVED" && retrieved.payload.ledgers).toBe(true);
    const reader = events.find(
      (event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === "acme.ledger_reader",
    );
    expect(reader?.kind === "AGENT_COMPLETED" && reader.payload.output).toEqual({
      goal: "Move the billing API to v2",
      facts: ["Clients call the API through the gateway", "the v1 API is retired on 1 March"],
      open_items: ["[doing] Write the contract tests", "[todo] Switch traffic"],
      open_blockers: ["No staging key yet"],
      procedures: [],
    });
    // A session without ledgers: nothing about them in the context.
    const plain: EngineEvent[] = [];
    for await (const event of client.submit("ledgers-none", "hello")) plain.push(event);
    const none = plain.find((event) => event.kind === "MEMORY_RETRIEVED");
    expect(none?.kind === "MEMORY_RETRIEVED" && "ledgers" in none.payload).toBe(false);
  });

  it("are written by agents through ctx.ledgers, recorded as theirs", async () => {
    const session = "ledgers-agent";
    for await (const _ of client.submit(session, "Please remember that the staging key arrives on Monday")) {
      // drain the turn
    }
    const [fact] = (await client.truth.getState(session)).facts;
    expect(fact).toMatchObject({
      statement: "the staging key arrives on Monday",
      by: "agent:acme.ledger_reader",
      evidence: ["said in turn 1"],
    });
    // The next turn's context has it.
    const events: EngineEvent[] = [];
    for await (const event of client.submit(session, "What do you know?")) events.push(event);
    const reader = events.find(
      (event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === "acme.ledger_reader",
    );
    expect(reader?.kind === "AGENT_COMPLETED" && reader.payload.output).toMatchObject({
      facts: ["the staging key arrives on Monday"],
    });
  });

  it("give agents the procedures memory learnt: how the user wants to be answered", async () => {
    const session = "ledgers-procedures";
    for await (const _ of client.submit(session, "From now on, please keep your answers short.")) {
      // drain the turn
    }
    const events: EngineEvent[] = [];
    for await (const event of client.submit(session, "How was the weekend?")) events.push(event);
    const retrieved = await retrievedOf(await nats.connect("runner"), events);
    expect(retrieved.procedures).toEqual(["Keep answers short"]);
    const reader = events.find(
      (event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === "acme.ledger_reader",
    );
    expect(reader?.kind === "AGENT_COMPLETED" && reader.payload.output).toMatchObject({
      procedures: ["Keep answers short"],
    });
  });

  it("refuse what cannot apply with a clear error, and store nothing for it", async () => {
    const stored = (await storedLedgerEvents(SESSION)).length;
    expect(await codeOf(client.truth.resolveFact(SESSION, "no-such-fact"))).toBe("not_found");
    expect(await codeOf(client.task.updateItem(SESSION, { id: "nope", status: "done" }))).toBe("not_found");
    expect(await codeOf(client.task.resolveBlocker(SESSION, "nope"))).toBe("not_found");
    expect(await codeOf(client.task.recordBlocker(SESSION, { message: "x", item_id: "nope" }))).toBe("not_found");
    expect(await codeOf(client.task.addItem(SESSION, { id: "cutover", title: "Something else" }))).toBe("conflict");
    expect(await codeOf(client.truth.upsertFact(SESSION, { statement: "   " }))).toBe("invalid_request");
    expect(await codeOf(client.truth.upsertFact(SESSION, { statement: "x", confidence: 2 }))).toBe("invalid_request");

    // Not JSON, and a request naming another session: error replies, and the runners go on serving.
    const nc = await nats.connect("client");
    const garbage = await nc.request(subjects.ledger(SESSION), new TextEncoder().encode("{not json"), {
      timeout: 5_000,
    });
    expect(garbage.headers?.get("Nats-Service-Error-Code")).toBe("400");
    const elsewhere = await nc.request(
      subjects.ledger(SESSION),
      encodeJson({ session_id: "other", op: "ledgers.state" }),
      { timeout: 5_000 },
    );
    expect(elsewhere.json<{ error: { code: string } }>().error.code).toBe("invalid_request");
    expect((await storedLedgerEvents(SESSION)).length).toBe(stored);
    expect((await client.task.getState(SESSION)).items).toHaveLength(2);
  });

  it("decide concurrent writes on two runners one at a time: none is lost, none stored twice", async () => {
    const session = "ledgers-concurrent";
    const titles = Array.from({ length: 24 }, (_, index) => `step ${index + 1}`);
    // Each title twice, all at once: 48 requests spread over the two runners, 24 items.
    await Promise.all([...titles, ...titles].map((title) => client.task.addItem(session, { title })));
    const state = await client.task.getState(session);
    expect(state.items.map((item) => item.title).sort()).toEqual([...titles].sort());
    expect(await storedLedgerEvents(session)).toHaveLength(24);
    const replay = await client.ledgers.replay(session);
    expect(replay.matches).toBe(true);
  });

  it("fold from the log after a restart of every process and of nats-server to what they were before", async () => {
    before = await client.ledgers.state(SESSION);
    expect(before.events).toBe(10);

    await Promise.all(running.map((process) => process.stop(5_000)));
    await nats.restart();
    await startAll(2);

    const replay = await client.ledgers.replay(SESSION);
    expect(replay.differences).toEqual([]);
    expect(replay.matches).toBe(true);
    expect(replay.rebuilt).toEqual(before);
    expect(await client.ledgers.state(SESSION)).toEqual(before);

    // The CLI says the same (and exits 0).
    const cli = await runConclave(nats.url, ["replay", "--session", SESSION]);
    expect(cli.stdout).toContain("✔ ledgers match the stored projection");
    expect(cli.code).toBe(0);
  });

  it("are rebuilt from the log when the projection is gone", async () => {
    const kv = await new Kvm(await nats.connect("runner")).open(buckets.ledgers);
    await kv.delete(SESSION);
    const replay = await client.ledgers.replay(SESSION);
    expect(replay.matches).toBe(false); // the projection is gone: the replay says so
    expect(await client.ledgers.state(SESSION)).toEqual(before); // a read folds the log and stores it again
    expect((await client.ledgers.replay(SESSION)).matches).toBe(true);
  });

  it("are read and written from the CLI, with one-line errors", async () => {
    const session = "ledgers-cli";
    const spec = await runConclave(nats.url, [
      "task",
      "spec",
      "--session",
      session,
      "Ship the release",
      "--acceptance",
      "tagged",
    ]);
    expect(spec.code).toBe(0);
    expect(spec.stdout).toContain("goal: Ship the release");
    const add = await runConclave(nats.url, ["task", "add", "--session", session, "Write notes", "--json"]);
    expect(add.code).toBe(0);
    const item = JSON.parse(add.stdout) as { id: string };
    const done = await runConclave(nats.url, ["task", "update", "--session", session, item.id, "--status", "done"]);
    expect(done.stdout).toContain("done");
    const fact = await runConclave(nats.url, [
      "truth",
      "upsert",
      "--session",
      session,
      "Release day is Friday",
      "--evidence",
      "the plan",
    ]);
    expect(fact.code).toBe(0);
    const digest = await runConclave(nats.url, ["truth", "digest", "--session", session]);
    expect(digest.stdout).toContain("Known facts: Release day is Friday");
    expect(digest.stdout).toContain("Task: Ship the release");

    const missing = await runConclave(nats.url, ["truth", "resolve", "--session", session, "nope"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim().split("\n")).toHaveLength(1);
    expect(missing.stderr).toContain("no fact nope");
    const usage = await runConclave(nats.url, [
      "task",
      "update",
      "--session",
      session,
      item.id,
      "--status",
      "finished",
    ]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--status must be todo, doing, done or dropped");
  });
});
