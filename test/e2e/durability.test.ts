import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { TurnAck } from "../../src/contracts/turn.ts";
import type { TurnStatusRecord } from "../../src/contracts/wal.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { replaySession } from "../../src/runtime/replay.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { SessionStore } from "../../src/runtime/sessionStore.ts";
import { remoteTurnServices } from "../../src/runtime/turnServices/remoteTurnServices.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { eventually, sleep, waitForEvent } from "../helpers/wait.ts";

const nats = useNatsServer();
/** How long the council takes: lets a test keep a turn running while it submits the next. */
const councilDelay = { ms: 0 };
let runner: Runner;
let worker: WorkerHandle;
let client: NatsConnection;

beforeAll(async () => {
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: builtinAgents("*"),
    services: [...CORE_SERVICES],
  });
  const nc = await nats.connect("runner");
  const remote = remoteTurnServices(nc);
  runner = await Runner.start(nc, {
    checkpointEvery: 2,
    services: {
      ...remote,
      decide: async (request, signal) => {
        await sleep(councilDelay.ms);
        return remote.decide(request, signal);
      },
    },
  });
  client = await nats.connect("client");
});
afterAll(async () => {
  await runner?.stop();
  await worker?.stop();
});

const watch = async (ack: TurnAck): Promise<EngineEvent[]> => {
  const events: EngineEvent[] = [];
  await watchTurn(client, ack, (event) => events.push(event), 20_000);
  return events;
};
/** Waits until every turn of the session is settled (its status is written just after TURN_COMPLETED). */
const settled = async (session: string) => {
  const statuses = await TurnStatusStore.open(await nats.connect("runner"));
  const isSettled = (list: TurnStatusRecord[]) =>
    list.length > 0 && list.every((status) => status.status !== "pending" && status.status !== "inflight");
  const list = await eventually(() => statuses.list(session), isSettled, { everyMs: 25 });
  if (!isSettled(list)) throw new Error(`turns of ${session} did not settle: ${JSON.stringify(list)}`);
  return list;
};
const completedOf = (events: EngineEvent[]) => {
  const last = events.at(-1);
  if (last?.kind !== "TURN_COMPLETED") throw new Error(`turn did not complete: ${last?.kind}`);
  return last;
};

describe("idempotency", () => {
  it("makes a resubmitted turn a no-op, even when the copies race", async () => {
    const first = await submitTurn(client, "idem", { text: "hello", idempotency_key: "msg-1" });
    const again = await submitTurn(client, "idem", { text: "hello", idempotency_key: "msg-1" });
    expect(first.duplicate).toBe(false);
    // The same turn; a duplicate runs nothing, so it carries no admission of its own.
    const { admission: _admission, ...acked } = first;
    expect(again).toEqual({ ...acked, duplicate: true });
    const racing = await Promise.all(
      [1, 2, 3].map(() => submitTurn(client, "idem", { text: "again", idempotency_key: "msg-2" })),
    );
    expect(new Set(racing.map((ack) => ack.turn_id)).size).toBe(1);
    expect(racing.filter((ack) => !ack.duplicate)).toHaveLength(1);
    await watch(first);
    await watch(racing[0]!);
    const statuses = await settled("idem");
    expect(statuses.map((status) => [status.turn_id, status.status])).toEqual([
      [1, "done"],
      [2, "done"],
    ]);
    const events = await readEvents(jetstream(client), await jetstreamManager(client), "idem");
    expect(events.filter((event) => event.kind === "TURN_COMPLETED")).toHaveLength(2);
  });
});

describe("double-texting", () => {
  it("enqueues a second turn by default: it runs after the first, in order", async () => {
    councilDelay.ms = 300;
    const first = await submitTurn(client, "queue", { text: "first" });
    const second = await submitTurn(client, "queue", { text: "second" });
    const [a, b] = await Promise.all([watch(first), watch(second)]);
    councilDelay.ms = 0;
    expect(completedOf(a).payload.outcome.status).toBe("Complete");
    expect(completedOf(b).payload.outcome.status).toBe("Complete");
    // The second waited for the first (TURN_QUEUED, recorded as it was taken), then started after it ended.
    expect(b[0]?.kind).toBe("TURN_QUEUED");
    const started = b.find((event) => event.kind === "TURN_STARTED");
    expect(started!.ts_monotonic).toBeGreaterThan(a.at(-1)!.ts_monotonic);
  });

  it("rejects a second turn with `busy` when asked to", async () => {
    councilDelay.ms = 500;
    const first = await submitTurn(client, "reject", { text: "first" });
    const refused = await submitTurn(client, "reject", { text: "second", on_busy: "reject" }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(RemoteCallError);
    expect((refused as RemoteCallError).code).toBe("busy");
    expect(completedOf(await watch(first)).payload.outcome.status).toBe("Complete");
    councilDelay.ms = 0;
    await settled("reject");
    const later = await submitTurn(client, "reject", { text: "third", on_busy: "reject" });
    expect(later.turn_id).toBe(2);
    await watch(later);
  });

  it("interrupts the running turn when asked to, and runs the new one", async () => {
    councilDelay.ms = 1_500;
    const first = await submitTurn(client, "interrupt", { text: "a long story" });
    const firstEvents: EngineEvent[] = [];
    const firstDone = watchTurn(client, first, (event) => firstEvents.push(event), 20_000);
    await waitForEvent(
      client,
      subjects.turnEvents(first.session_id, first.turn_id, await eventStreamCount(client)),
      (event) => event.kind === "TURN_STAGE_CHANGED" && event.payload.stage === "council",
    );
    councilDelay.ms = 0;
    const second = await submitTurn(client, "interrupt", { text: "never mind that", on_busy: "interrupt" });
    await firstDone;
    expect(completedOf(firstEvents).payload.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: [{ stage: "council", code: "interrupted", message: "interrupted by turn 2" }],
    });
    expect(completedOf(await watch(second)).payload.outcome.status).toBe("Complete");
  });
});

describe("turn status and replay", () => {
  it("shows every turn as done, with its outcome", async () => {
    const statuses = await settled("queue");
    expect(statuses).toEqual([
      expect.objectContaining({ turn_id: 1, status: "done", outcome: "Complete", attempts: 1 }),
      expect.objectContaining({ turn_id: 2, status: "done", outcome: "Complete", attempts: 1 }),
    ]);
  });

  it("rebuilds the session's state from the log, from the latest checkpoint, equal to the stored one", async () => {
    for (const text of ["I'm stressed", "there's a bug, can you help?", "I fixed it, so happy!", "thanks", "bye now"]) {
      await watch(await submitTurn(client, "replay", { text }));
    }
    const runnerConnection = await nats.connect("runner");
    const sessions = await SessionStore.open(runnerConnection);
    const js = jetstream(runnerConnection);
    const jsm = await jetstreamManager(runnerConnection);
    const result = await replaySession(js, jsm, sessions, "replay");
    expect(result.differences).toEqual([]);
    expect(result.matches).toBe(true);
    expect(result.from_turn_id).toBe(4);
    expect(result.turns_replayed).toBe(1);
    expect(result.rebuilt.turns_completed).toBe(5);
    expect(result.rebuilt.stance).not.toEqual({ valence: 0, warmth: 0, caution: 0, curiosity: 0 });

    // A stored state that the log does not support is caught.
    const stored = result.stored!;
    await sessions.saveSnapshot("replay", {
      ...stored,
      stance: { ...stored.stance, warmth: stored.stance.warmth - 0.5 },
    });
    const tampered = await replaySession(js, jsm, sessions, "replay");
    expect(tampered.matches).toBe(false);
    expect(tampered.differences).toEqual([expect.stringMatching(/^stance\.warmth: /)]);
  });
});
