/**
 * The intake across a lost answer (issue 34): a JetStream election that outlasts the intake's patience can
 * store a turn's WAL entry and lose the answer. Before, the intake released the idempotency key and told the
 * client "could not be stored; submit it again": the retry made a second turn, and both ran. Now it answers
 * `unavailable` and keeps the key's reservation, so the client's retry (same key: `submit` retries a keyed
 * submission by itself) resolves to the same turn, and it runs once. The failpoint `ingress.wal_answer_lost` acts the fault
 * out on a real runner: the write lands, its answer is lost.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect, type EngineEvent } from "../../src/client/index.ts";
import { submitTurn } from "../../src/client/turns.ts";
import { isConclaveError } from "../../src/errors.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";
import { waitForEvent } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;

beforeAll(async () => {
  await Promise.all([
    processes.spawn("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("runner", ["runner"], { CONCLAVE_FAILPOINTS: "ingress.wal_answer_lost" }),
  ]);
  client = await connect({ nc: await nats.connect("client") });
});

const started = (events: EngineEvent[]) => events.filter((event) => event.kind === "TURN_STARTED").length;

describe("a turn whose WAL write lands but whose answer is lost", () => {
  it("submitted by the client: its retry resolves to the same turn, which runs once", async () => {
    const turn = client.submit("lost-answer-keyed", "I'm stressed about my deadline", {
      idempotencyKey: "plan-the-deadline",
    });
    const ack = await turn.ack; // the first answer was `unavailable`; the client tried again with the same key
    expect(ack.turn_id).toBe(1);
    expect((await turn.result).outcome.status).toBe("Complete");
    expect(await client.turns("lost-answer-keyed")).toEqual([expect.objectContaining({ turn_id: 1 })]);
    expect(started(await turnLog(client, "lost-answer-keyed", 1))).toBe(1);
  });

  it("submitted with one key twice, by two clients at once: one turn, run once", async () => {
    const key = "same-intent-from-two-places";
    const [first, second] = [
      client.submit("lost-answer-twice", "I'm stressed about my deadline", { idempotencyKey: key }),
      client.submit("lost-answer-twice", "I'm stressed about my deadline", { idempotencyKey: key }),
    ];
    const acks = await Promise.all([first.ack, second.ack]);
    expect(acks.map((ack) => ack.turn_id)).toEqual([1, 1]);
    await first.result;
    expect((await client.turns("lost-answer-twice")).map((turn) => turn.turn_id)).toEqual([1]);
    expect(started(await turnLog(client, "lost-answer-twice", 1))).toBe(1);
  });

  it("submitted without a key: never told `not stored`, and the stored turn runs", async () => {
    const raw = await nats.connect("client");
    const refused = await submitTurn(raw, "lost-answer-raw", { text: "I'm stressed about my deadline" }).catch(
      (error: unknown) => error,
    );
    expect(isConclaveError(refused, "unavailable")).toBe(true);
    expect((refused as Error).message).toMatch(/may or may not be stored/);
    expect((refused as { retryAfterMs?: number }).retryAfterMs).toBeGreaterThan(0);
    // It was stored: the runner takes it and it completes.
    const completed = await waitForEvent(
      raw,
      subjects.turnEvents("lost-answer-raw", 1, await eventStreamCount(raw)),
      (event) => event.kind === "TURN_COMPLETED",
    );
    expect(completed.turn_id).toBe(1);
  });
});
