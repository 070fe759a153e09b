/**
 * Idle sessions cost nothing: a session with no turn leaves the runner's
 * memory after its TTL and comes back, from its stored state, on its next
 * turn; while sessions are idle the runner's only traffic is its liveness
 * heartbeat; and a dead runner's sessions (and its turn under way) move to a
 * survivor. Every wait follows an event (a KV key's changes, a turn's status).
 */
import { once } from "node:events";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm, KvWatchInclude } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { buckets } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn } from "../../src/client/turns.ts";
import { type CognitionBackend, offlineBackend } from "../../src/cognition/backend.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { SessionLeases } from "../../src/runtime/runner/leases.ts";
import { runnerKey } from "../../src/runtime/runner/liveness.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { idleSessionTtlMs } from "../../src/runtime/runner/sessionHost.ts";
import { SessionStore } from "../../src/runtime/sessionStore.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { settledStatus } from "../helpers/turnStatus.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);

/** The council waits while `held` is set; `reached` resolves at the next council call. */
let held: Promise<void> | null = null;
let reached: (() => void) | null = null;
const gatedBackend: CognitionBackend = {
  ...offlineBackend,
  decide: async (request, signal) => {
    reached?.();
    if (held) await held;
    return offlineBackend.decide(request, signal);
  },
};

let worker: WorkerHandle;
let client: NatsConnection;
let observer: NatsConnection;

beforeAll(async () => {
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: builtinAgents("*"),
    services: [...CORE_SERVICES],
    backend: gatedBackend,
  });
  [client, observer] = await Promise.all([nats.connect("client"), nats.connect("runner")]);
});

afterAll(async () => {
  await worker?.stop();
});

/** Resolves once `count` changes of `key` in `bucket` matching `operation` are seen, counted from now. */
async function keyChanges(
  bucket: string,
  key: string,
  count: number,
  accept: (operation: string, value: unknown) => boolean,
): Promise<() => Promise<void>> {
  const kv = await new Kvm(observer).create(bucket);
  const watch = await kv.watch({ key, include: KvWatchInclude.UpdatesOnly });
  let seen = 0;
  const done = (async () => {
    for await (const entry of watch) {
      const value = entry.operation === "PUT" ? entry.json() : null;
      if (accept(entry.operation, value) && ++seen >= count) return;
    }
  })();
  return async () => {
    try {
      await done;
    } finally {
      watch.stop();
    }
  };
}

async function owner(sessionId: string): Promise<string | null> {
  const entry = await (await new Kvm(observer).create(buckets.owners)).get(sessionId);
  return entry?.operation === "PUT" ? (entry.json() as { runner: string }).runner : null;
}

describe("an idle session", () => {
  it("leaves the runner's memory after its TTL and continues where it was on its next turn", async () => {
    const runner = await Runner.start(await nats.connect("runner"), { id: "evicting", idleSessionTtlMs: 200 });
    try {
      const store = await SessionStore.open(observer);
      const first = await submitTurn(client, "idle-evicted", { text: "I'm worried about my exam" });
      // The runner lets go of the session's ownership when (and only when) it evicts it.
      const evicted = await keyChanges(buckets.owners, "idle-evicted", 1, (operation) => operation !== "PUT");
      expect((await settledStatus(observer, first.session_id, first.turn_id)).status).toBe("done");
      await evicted();
      const stored = await store.snapshot("idle-evicted");
      expect(stored).toMatchObject({ turns_completed: 1, last_turn_id: 1 });
      expect(await owner("idle-evicted")).toBeNull();

      const second = await submitTurn(client, "idle-evicted", { text: "it is tomorrow morning" });
      expect(second.turn_id).toBe(2);
      expect((await settledStatus(observer, second.session_id, second.turn_id)).status).toBe("done");
      // Restored from the stored state, not started afresh: the count and the last turn go on from turn 1.
      expect(await store.snapshot("idle-evicted")).toMatchObject({ turns_completed: 2, last_turn_id: 2 });
      const events = await readEvents(jetstream(observer), await jetstreamManager(observer), "idle-evicted", 2);
      expect(events.map((event) => event.kind)).toContain("TURN_COMPLETED");
      expect(events.map((event) => event.kind)).not.toContain("TURN_RESUMED");
    } finally {
      await runner.stop();
    }
  }, 30_000);

  it("costs no KV operation and no JetStream request: the runner's heartbeat is its only traffic", async () => {
    const runnerConnection = await nats.connect("runner");
    const runner = await Runner.start(runnerConnection, { id: "idle-quiet" });
    try {
      for (const session of ["quiet-1", "quiet-2", "quiet-3", "quiet-4", "quiet-5"]) {
        const ack = await submitTurn(client, session, { text: "hello there" });
        expect((await settledStatus(observer, ack.session_id, ack.turn_id)).status).toBe("done");
      }
      const jsm = await jetstreamManager(observer);
      const beats = (count: number) =>
        keyChanges(buckets.runners, runnerKey("idle-quiet"), count, (operation) => operation === "PUT");
      // Let what follows the last turn (its ack, the worker's memory commit) pass: two heartbeats.
      await (await beats(2))();
      // Every bucket a runner writes, but its liveness lease's.
      const kvSeqs = async () => {
        const seqs: Record<string, number> = {};
        for (const bucket of [buckets.owners, buckets.sessions, buckets.turns, buckets.suspended, buckets.ledgers])
          seqs[bucket] = (await jsm.streams.info(`KV_${bucket}`)).state.last_seq;
        return seqs;
      };
      const kvBefore = await kvSeqs();
      const idle = await beats(5);
      const apiBefore = (await jsm.getAccountInfo()).api.total;
      const sentBefore = runnerConnection.stats().outMsgs;
      await idle();
      const sent = runnerConnection.stats().outMsgs - sentBefore;
      const apiAfter = (await jsm.getAccountInfo()).api.total;
      // Five heartbeats (2 s and more) with five sessions live. What the runner sent meanwhile: those five
      // heartbeats, and perhaps one pull request of the WAL's consumer (one per runner every 30 s), no KV read.
      expect(sent).toBeGreaterThanOrEqual(5);
      expect(sent).toBeLessThanOrEqual(6);
      // No JetStream API request in the account but this test's own account-info call.
      expect(apiAfter - apiBefore).toBe(1);
      expect(await kvSeqs()).toEqual(kvBefore);
      expect(kvBefore[buckets.owners]).toBeGreaterThan(0);
    } finally {
      await runner.stop();
    }
  }, 30_000);

  it("keeps its documented default TTL and refuses a malformed one", () => {
    expect(idleSessionTtlMs(undefined, {})).toBe(600_000);
    expect(idleSessionTtlMs(undefined, { CONCLAVE_IDLE_SESSION_TTL_MS: "2500" })).toBe(2_500);
    expect(idleSessionTtlMs(1_000, { CONCLAVE_IDLE_SESSION_TTL_MS: "2500" })).toBe(1_000);
    expect(() => idleSessionTtlMs(undefined, { CONCLAVE_IDLE_SESSION_TTL_MS: "ten minutes" })).toThrow(
      /CONCLAVE_IDLE_SESSION_TTL_MS/,
    );
    expect(() => idleSessionTtlMs(0)).toThrow(RangeError);
  });
});

describe("session ownership", () => {
  it("is taken over by a survivor once its runner's connection is gone, and not before", async () => {
    const doomedConnection = await nats.connect("runner");
    const doomed = await SessionLeases.open(doomedConnection, "doomed");
    const survivor = await SessionLeases.open(await nats.connect("runner"), "survivor");
    try {
      expect(await doomed.acquire("owned-session")).toBe(true);
      expect(await survivor.acquire("owned-session")).toBe(false); // its owner lives
      const lapsed = new Promise<void>((resolve) => doomed.whenLapsed(resolve));
      const takenOver = await keyChanges(
        buckets.owners,
        "owned-session",
        1,
        (operation, value) => operation === "PUT" && (value as { runner: string }).runner === "survivor",
      );
      await doomedConnection.close(); // no goodbye: its liveness lease lapses on its own
      await lapsed;
      expect(doomed.owns("owned-session")).toBe(false);
      await until(() => survivor.acquire("owned-session"), { timeoutMs: 10_000, everyMs: 100, what: "takeover" });
      await takenOver();
      expect(survivor.owns("owned-session")).toBe(true);
      expect(await owner("owned-session")).toBe("survivor");
    } finally {
      await survivor.close();
    }
  }, 30_000);

  it("moves to a survivor when a runner is killed mid-turn, which resumes the turn", async () => {
    let release!: () => void;
    held = new Promise((resolve) => {
      release = resolve;
    });
    const councilCalled = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let victim: ConclaveProcess | undefined;
    let survivor: Runner | undefined;
    try {
      victim = await processes.spawn("runner-victim", ["runner"]);
      const ack = await submitTurn(client, "killed-owner", { text: "help me plan my week" });
      await councilCalled; // the turn is under way on the only runner
      reached = null;
      // In this process, so it is up in well under the council stage's deadline (a spawned runner, on a loaded
      // machine, could come up after the victim's council stage timed out and the turn ended there).
      survivor = await Runner.start(await nats.connect("runner"), { id: "survivor" });
      const exited = once(victim.child, "exit");
      victim.child.kill("SIGKILL");
      await exited;
      release();
      expect((await settledStatus(observer, ack.session_id, ack.turn_id)).status).toBe("done");
      const events = await readEvents(jetstream(observer), await jetstreamManager(observer), "killed-owner", 1);
      const resumed = events.flatMap((event) => (event.kind === "TURN_RESUMED" ? [event.payload.previous_runner] : []));
      expect(resumed).toEqual([expect.stringMatching(new RegExp(`:${victim.child.pid}$`))]);
      expect(await owner("killed-owner")).toBe("survivor");
    } finally {
      held = null;
      release?.();
      await survivor?.stop();
    }
  }, 60_000);
});
