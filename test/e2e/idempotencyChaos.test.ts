import { createHash } from "node:crypto";
import { once } from "node:events";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { buckets } from "../../src/bus/subjects.ts";
import { type ConclaveProcess, spawnConclave } from "../../src/cli/childProcess.ts";
import { submitTurn } from "../../src/client/turns.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import type { Failpoint } from "../../src/runtime/failpoints.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { settledStatus } from "../helpers/turnStatus.ts";

/**
 * Chaos at the ingress, bounded and synchronised on events: a runner is made
 * to die (SIGKILL, by a failpoint) exactly between reserving an idempotency
 * key and writing the WAL, or between the WAL write and the reply. The
 * client's retry with the same key must then be acknowledged, and the turn
 * must run to completion once.
 */
const nats = useNatsServer();
const runners: ConclaveProcess[] = [];
let worker: WorkerHandle;
let client: NatsConnection;

const startRunner = async (name: string, failpoint?: Failpoint): Promise<ConclaveProcess> => {
  const runner = spawnConclave(name, ["runner"], {
    ...process.env,
    CONCLAVE_NATS_URL: nats.url,
    CONCLAVE_LOG: "quiet",
    ...(failpoint ? { CONCLAVE_FAILPOINTS: failpoint } : {}),
  });
  runners.push(runner);
  await runner.ready;
  return runner;
};

beforeAll(async () => {
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: builtinAgents("*"),
    services: [...CORE_SERVICES],
  });
  client = await nats.connect("client");
});
afterAll(async () => {
  await Promise.allSettled(runners.map((runner) => runner.stop(5_000)));
  await worker?.stop();
});

/** Submits with the key to a runner armed to die at `failpoint`; resolves once that runner is dead. */
async function submitIntoACrash(session: string, key: string, failpoint: Failpoint): Promise<void> {
  const doomed = await startRunner(`doomed-${failpoint}`, failpoint);
  const died = once(doomed.child, "exit");
  const attempt = submitTurn(client, session, { text: "I'm stressed about my deadline", idempotency_key: key }, 3_000);
  const [signal] = (await died).slice(1) as [NodeJS.Signals | null];
  expect(signal).toBe("SIGKILL");
  const error = await attempt.then(
    () => null,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(RemoteCallError);
}

async function completedOnce(session: string, turnId: number): Promise<void> {
  const nc = await nats.connect("runner");
  const status = await settledStatus(nc, session, turnId, 40_000);
  expect(status.status).toBe("done");
  const events = await readEvents(jetstream(nc), await jetstreamManager(nc), session, turnId);
  expect(events.filter((event) => event.kind === "TURN_COMPLETED")).toHaveLength(1);
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
  const all = await readEvents(jetstream(nc), await jetstreamManager(nc), session);
  expect(new Set(all.map((event) => event.turn_id))).toEqual(new Set([turnId]));
}

describe("retrying a submission with its idempotency key", () => {
  it("succeeds after the runner died between reserving the key and writing the WAL", async () => {
    await submitIntoACrash("chaos-reserve", "k-1", "ingress.after_reserve");
    const healthy = await startRunner("healthy-1");
    const retry = await submitTurn(client, "chaos-reserve", {
      text: "I'm stressed about my deadline",
      idempotency_key: "k-1",
    });
    expect(retry).toMatchObject({ session_id: "chaos-reserve", turn_id: 1, duplicate: false });
    await completedOnce("chaos-reserve", 1);
    const again = await submitTurn(client, "chaos-reserve", {
      text: "I'm stressed about my deadline",
      idempotency_key: "k-1",
    });
    expect(again).toEqual({ ...retry, duplicate: true });
    await healthy.stop(10_000);
  }, 60_000);

  it("returns the stored turn after the runner died between the WAL write and the reply", async () => {
    await submitIntoACrash("chaos-wal", "k-2", "ingress.after_wal");
    await startRunner("healthy-2");
    const retry = await submitTurn(client, "chaos-wal", {
      text: "I'm stressed about my deadline",
      idempotency_key: "k-2",
    });
    expect(retry).toMatchObject({ session_id: "chaos-wal", turn_id: 1, duplicate: true });
    await completedOnce("chaos-wal", 1);
  }, 60_000);

  it("recovers the placeholder a runner of an earlier version left when it died mid-accept", async () => {
    // What eb40ee5's ingress left for a key when its runner died before the WAL write: `{turn_id: 0}`, forever;
    // every retry was refused with `internal: idempotency key … is stuck`.
    await startRunner("healthy-3");
    const runnerConnection = await nats.connect("runner");
    const kv = await new Kvm(runnerConnection).open(buckets.sessions);
    const hash = createHash("sha256").update("k-3").digest("hex").slice(0, 32);
    await kv.put(`idem.chaos-legacy.${hash}`, JSON.stringify({ turn_id: 0 }));
    const retry = await submitTurn(
      client,
      "chaos-legacy",
      { text: "I'm stressed about my deadline", idempotency_key: "k-3" },
      10_000,
    );
    expect(retry).toMatchObject({ session_id: "chaos-legacy", duplicate: false });
    await completedOnce("chaos-legacy", retry.turn_id);
  }, 60_000);
});
