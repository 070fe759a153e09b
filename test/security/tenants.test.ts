import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { busOptions, connectBus } from "../../src/bus/connection.ts";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { eventStreamOf, subjects } from "../../src/bus/subjects.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { connect as connectClient } from "../../src/client/client.ts";
import { readThroughRunner, submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { DEFAULT_EVENT_STREAMS } from "../../src/eventlog/eventStreams.ts";
import { freePort, REPO_ROOT, type RunningNatsServer, startNatsServer } from "../../src/nats/server.ts";
import { withTenants } from "../../src/nats/tenants.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";

/**
 * Tenants: users with accounts of their own (the repo's nats.conf plus two
 * tenant accounts, as `withTenants` writes them). Each reaches only its own
 * sessions: same session id, different sessions; no way to name another
 * tenant's session, read the log, or see another's replies.
 */
let server: RunningNatsServer;
let dir: string;
let runner: Runner;
let worker: WorkerHandle;
const opened: NatsConnection[] = [];

const asTenant = async (name: string): Promise<NatsConnection> => {
  const nc = await connect({ servers: server.url, user: name, pass: `${name}-secret` });
  opened.push(nc);
  return nc;
};
const asRole = async (role: "runner" | "worker" | "client"): Promise<NatsConnection> => {
  const nc = await connectBus(busOptions(role, { servers: server.url }));
  opened.push(nc);
  return nc;
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "conclave-tenants-"));
  const config = join(dir, "nats.conf");
  const base = readFileSync(join(REPO_ROOT, "nats.conf"), "utf8");
  writeFileSync(
    config,
    withTenants(base, [
      { name: "alice", password: "alice-secret" },
      { name: "bob", password: "bob-secret" },
    ]),
  );
  server = await startNatsServer({ config, port: await freePort(), storeDir: join(dir, "store") });
  worker = await startWorker({ nc: await asRole("worker"), agents: builtinAgents("*"), services: [...CORE_SERVICES] });
  runner = await Runner.start(await asRole("runner"));
});
afterAll(async () => {
  await runner?.stop();
  await worker?.stop();
  await Promise.allSettled(opened.map((nc) => nc.close()));
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("tenants", () => {
  it("submit and read their own sessions through the runner, under the ids they chose", async () => {
    const alice = await asTenant("alice");
    const ack = await submitTurn(alice, "chat1", { text: "alice here: I'm stressed about my deadline" });
    expect(ack).toMatchObject({ session_id: "chat1", turn_id: 1, events_subject: "conclave.turn.watch.chat1" });
    const events: EngineEvent[] = [];
    const completed = await watchTurn(alice, ack, (event) => events.push(event), 30_000);
    expect(completed.payload.outcome.status).not.toBe("Failed");
    expect(events[0]).toMatchObject({ kind: "TURN_STARTED", session_id: "chat1" });
    // Every seq once, but for stream chunks relayed live: several share the seq of the stored chunk holding them.
    const seqs = [...new Set(events.map((event) => event.seq))].sort((a, b) => a - b);
    expect(seqs).toEqual(seqs.map((_, index) => index));
    const reply = events.flatMap((event) =>
      event.kind === "STREAM_CHUNK" && event.payload.stream_id === "default" ? [event.payload.delta] : [],
    );
    expect(reply.join("")).toBe(completed.payload.response);
  });

  it("never see another tenant's session, even under the same session id", async () => {
    const bob = await asTenant("bob");
    // bob's "chat1" is bob's own: a new session, turn 1, nothing of alice's in it.
    expect(await readThroughRunner(bob, "chat1")).toEqual([]);
    const ack = await submitTurn(bob, "chat1", { text: "bob here" });
    expect(ack).toMatchObject({ session_id: "chat1", turn_id: 1 });
    await watchTurn(bob, ack, () => {}, 30_000);
    const inputs = (await readThroughRunner(bob, "chat1")).flatMap((event) =>
      event.kind === "TURN_STARTED" ? [event.payload.user_input] : [],
    );
    expect(inputs).toEqual(["bob here"]);
  });

  it("keep ledgers and search memory of their own sessions only, under the ids they chose", async () => {
    const alice = await connectClient({ nc: await asTenant("alice") });
    const bob = await connectClient({ nc: await asTenant("bob") });
    const fact = await alice.truth.upsertFact("plans", { statement: "Alice flies on Friday" });
    await alice.task.addItem("plans", { title: "Pack the bags" });
    expect((await alice.ledgers.state("plans")).session_id).toBe("plans");
    const replay = await alice.ledgers.replay("plans");
    expect(replay).toMatchObject({ matches: true, rebuilt: { session_id: "plans", events: 2 } });
    // bob's "plans" is bob's own: empty, and alice's fact cannot be resolved from there.
    expect((await bob.truth.getState("plans")).facts).toEqual([]);
    await expect(bob.truth.resolveFact("plans", fact.id)).rejects.toMatchObject({ code: "not_found" });
    // The runtime keeps alice's under its own id; an agent of a tenant's turn sees them in its context.
    const runtime = await connectClient({ nc: await asRole("client") });
    expect((await runtime.truth.getState("alice-plans")).facts.map((f) => f.statement)).toEqual([
      "Alice flies on Friday",
    ]);
    const ack = await submitTurn(await asTenant("alice"), "plans", { text: "what about Friday?" });
    const events: EngineEvent[] = [];
    await watchTurn(await asTenant("alice"), ack, (event) => events.push(event), 30_000);
    // The log notes the digest was given (by reference: its text stays in the ledgers).
    const retrieved = events.find((event) => event.kind === "MEMORY_RETRIEVED");
    expect(retrieved?.kind === "MEMORY_RETRIEVED" && retrieved.payload.ledgers).toBe(true);
    // Memory search: alice's session's episode, not bob's.
    const found = await alice.memory.search("plans", "Friday");
    expect(found.map((item) => item.kind)).toContain("episode");
    expect(await bob.memory.search("plans", "Friday")).toEqual([]);
  });

  it("cannot name another tenant's subjects, nor reach the log, the WAL or the stores", async () => {
    const bob = await asTenant("bob");
    for (const subject of [
      "conclave.tenant.alice.turn.watch.chat1",
      "conclave.tenant.alice.turn.submit.chat1",
      "conclave.tenant.alice.ledger.plans",
      "conclave.tenant.alice.memory.search.plans",
      subjects.turnEvents("alice-chat1", 1, DEFAULT_EVENT_STREAMS),
      "$JS.API.INFO",
      `$JS.API.STREAM.INFO.${eventStreamOf("alice-chat1", DEFAULT_EVENT_STREAMS)}`,
      "$KV.conclave_sessions.snapshot.alice-chat1",
    ]) {
      const outcome = await bob.request(subject, new TextEncoder().encode("{}"), { timeout: 1_000 }).then(
        (reply) => reply.string(),
        (error: Error) => error.message,
      );
      // Nobody answers, or nats-server itself says the account has no JetStream.
      expect(outcome, subject).toMatch(/no responders|timeout|jetstream not enabled/i);
    }
  });

  it("cannot subscribe to another tenant's replies or events: their traffic never reaches its account", async () => {
    const bob = await asTenant("bob");
    const seen: string[] = [];
    bob.subscribe(">", {
      callback: (_error, msg) => {
        seen.push(msg.subject);
      },
    });
    await bob.flush();
    const alice = await asTenant("alice");
    const ack = await submitTurn(alice, "chat2", { text: "private to alice" });
    await watchTurn(alice, ack, () => {}, 30_000);
    await bob.flush();
    expect(seen).toEqual([]);
  });

  it("use the command line with their own credentials", async () => {
    // Not spawnSync: the runner and worker of this test live in this process and must keep answering.
    const sent = await promisify(execFile)(
      process.execPath,
      [CONCLAVE_BIN, "send", "--json", "--session", "cli", "hello from the terminal"],
      {
        env: {
          ...process.env,
          CONCLAVE_NATS_URL: server.url,
          CONCLAVE_NATS_USER: "alice",
          CONCLAVE_NATS_PASSWORD: "alice-secret",
        },
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    const events = sent.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as EngineEvent);
    expect(events[0]).toMatchObject({ kind: "TURN_STARTED", session_id: "cli" });
    expect(events.at(-1)?.kind).toBe("TURN_COMPLETED");
  });

  it("leave the runtime's own account as it was: its client reads the log directly, tenants' sessions prefixed", async () => {
    const client = await asRole("client");
    const events = await readThroughRunner(client, "alice-chat1");
    expect(events.length).toBeGreaterThan(0);
    await expect(submitTurn(client, "x".repeat(65), { text: "hi" })).rejects.toBeInstanceOf(RemoteCallError);
  });
});
