import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { encodeJson } from "../../src/bus/codec.ts";
import { streams, subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { WalEntry } from "../../src/contracts/wal.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { ensureDeadLetterStream, MAX_TURN_ATTEMPTS, WAL_ACK_WAIT_MS } from "../../src/eventlog/streams.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { ensureTurnWal } from "../../src/eventlog/turnWal.ts";
import { deadLetterCounts, readDeadLetters, seededRandom } from "../helpers/fuzz.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { eventually, sleep } from "../helpers/wait.ts";
import { sessionConsumer, walConsumersState, walSubject } from "../helpers/wal.ts";

const SEED = Number(process.env.CONCLAVE_FUZZ_SEED ?? 0x5eed_0007);
const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Settling must happen before the WAL's ack wait could pass: after it, an entry left unsettled would be redelivered. */
const SETTLE_MS = WAL_ACK_WAIT_MS - 500;
const WAL_LETTERS = subjects.deadLetter("wal");
const POISON_LETTERS = subjects.deadLetter("poison");

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let worker: ConclaveProcess;
let runner: ConclaveProcess | null = null;
let runnerRole: NatsConnection;
let observer: NatsConnection;
let client: NatsConnection;
let runners = 0;

beforeAll(async () => {
  [worker, runnerRole, observer, client] = await Promise.all([
    processes.spawn("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
    nats.connect("runner"),
    nats.connect("observer"),
    nats.connect("client"),
  ]);
  // What a runner does first: the WAL and its shared consumer, and the dead-letter stream.
  const jsm = await jetstreamManager(runnerRole);
  await Promise.all([ensureTurnWal(jsm), ensureDeadLetterStream(jsm)]);
});

async function startRunner(): Promise<ConclaveProcess> {
  runner ??= await processes.spawn(`runner-${++runners}`, ["runner"]);
  return runner;
}

async function stopRunner(): Promise<void> {
  await runner?.stop(5_000);
  runner = null;
}

/** The runners' shared consumer as the server sees it (read as the runner role, whose consumer it is). */
async function consumerState() {
  return walConsumersState(await jetstreamManager(runnerRole));
}

/** WAL entries still stored under these sessions' subjects. */
async function walStored(...sessions: string[]): Promise<Record<string, number>> {
  const jsm = await jetstreamManager(runnerRole);
  const stored: Record<string, number> = {};
  for (const session of sessions) {
    const info = await jsm.streams.info(streams.turns, { subjects_filter: walSubject(session) });
    stored[session] = info.state.subjects?.[walSubject(session)] ?? 0;
  }
  return stored;
}

const count = async (dlq: string) => (await deadLetterCounts(runnerRole, dlq))[dlq] ?? 0;

describe("a poison turn", () => {
  it(`is stopped after ${MAX_TURN_ATTEMPTS} attempts: dead-lettered once, failed, never run and never looped`, async () => {
    await stopRunner(); // nothing may take the entry but the pulls below
    const session = "poison";
    const js = jetstream(runnerRole);
    const statuses = await TurnStatusStore.open(runnerRole);
    const entry: WalEntry = {
      session_id: session,
      turn_id: 1,
      text: "I'm feeling stressed about my deadline",
      on_busy: "enqueue",
      submitted_at: Date.now(),
    };
    await statuses.pending(session, 1, entry.submitted_at);
    const stored = await js.publish(walSubject(session), encodeJson(entry), { msgID: `${session}.1` });
    const poisonBefore = await count(POISON_LETTERS);

    // Runners that each start the turn and die on it: a delivery through the runners' own consumer,
    // the turn taken as a runner takes it (one more attempt in its status), then handed back (nak).
    const consumer = await js.consumers.get(streams.turns, sessionConsumer(session));
    const attempts: { delivery: number; attempts: number | undefined }[] = [];
    for (let pulls = 0; attempts.length < MAX_TURN_ATTEMPTS; pulls++) {
      if (pulls > 4 * MAX_TURN_ATTEMPTS) throw new Error(`the entry was not delivered ${MAX_TURN_ATTEMPTS} times`);
      const msg = await consumer.next({ expires: 2_000 });
      if (!msg) continue;
      if (msg.seq !== stored.seq) continue; // an entry of another test, left for its runner
      const taken = await statuses.take(
        session,
        1,
        `doomed-runner-${attempts.length + 1}`,
        entry.submitted_at,
        MAX_TURN_ATTEMPTS,
      );
      expect(taken).toMatchObject({ taken: true, poison: false });
      attempts.push({ delivery: msg.info.deliveryCount, attempts: (await statuses.get(session, 1))?.attempts });
      msg.nak();
    }
    expect(attempts).toEqual(
      Array.from({ length: MAX_TURN_ATTEMPTS }, (_, i) => ({ delivery: i + 1, attempts: i + 1 })),
    );
    expect((await statuses.get(session, 1))?.status).toBe("inflight");

    // The next runner to get it must recognise it as poison instead of starting it again.
    const live = await startRunner();
    const failed = await eventually(
      () => statuses.get(session, 1),
      (record) => record?.status === "failed",
    );
    expect(failed).toMatchObject({
      status: "failed",
      attempts: MAX_TURN_ATTEMPTS,
      reason: expect.stringMatching(/poison/),
    });
    const failedAt = Date.now();
    expect(
      await eventually(
        () => count(POISON_LETTERS),
        (n) => n > poisonBefore,
      ),
    ).toBe(poisonBefore + 1);

    // Settled at once (terminated, not merely left to time out): nothing pending, nothing stored.
    const settled = await eventually(
      async () => ({ consumer: await consumerState(), stored: await walStored(session) }),
      ({ consumer, stored }) => consumer.num_pending === 0 && consumer.num_ack_pending === 0 && stored[session] === 0,
      { timeoutMs: SETTLE_MS },
    );
    expect
      .soft(settled, `WAL settled within ${SETTLE_MS} ms`)
      .toEqual({ consumer: { num_pending: 0, num_ack_pending: 0 }, stored: { [session]: 0 } });

    // Still so once the ack wait has passed: dead-lettered once, failed, never run.
    await sleep(Math.max(0, failedAt + WAL_ACK_WAIT_MS + 1_000 - Date.now()));
    expect.soft(await consumerState(), "consumer after the ack wait").toEqual({ num_pending: 0, num_ack_pending: 0 });
    expect.soft(await walStored(session), "WAL after the ack wait").toEqual({ [session]: 0 });
    expect.soft(await count(POISON_LETTERS), "poison dead letters after the ack wait").toBe(poisonBefore + 1);
    expect(await statuses.get(session, 1)).toMatchObject({ status: "failed", attempts: MAX_TURN_ATTEMPTS });
    const events = await readEvents(jetstream(observer), await jetstreamManager(observer), session, 1);
    expect(events.filter((event) => event.kind === "TURN_COMPLETED")).toEqual([]);
    expect(events).toEqual([]);
    expect(live.child.exitCode).toBeNull();

    // The dead letter itself, read back as the read-only observer with a JetStream consumer.
    const poison = (await readDeadLetters(observer, POISON_LETTERS)).filter(
      ({ letter }) => letter.subject === walSubject(session),
    );
    expect(poison).toHaveLength(1);
    expect(poison[0]?.letter).toMatchObject({ code: "internal", truncated: false });
    expect(poison[0]?.letter.reason).toMatch(new RegExp(`${MAX_TURN_ATTEMPTS} times`));
    expect(JSON.parse(poison[0]?.letter.data ?? "null")).toEqual(entry);
  });
});

describe("garbage on the turn WAL", () => {
  it("is dead-lettered under conclave.dlq.wal, terminated, and does not stop the runner", async () => {
    const live = await startRunner();
    const rng = seededRandom(SEED);
    const session = "wal-garbage";
    const garbage: Uint8Array[] = [
      new Uint8Array(),
      encoder.encode('{"session_id": "wal-garbage", "turn_id": 1, "te'),
      encoder.encode("null"),
      encoder.encode(JSON.stringify([rng.int(0, 99), "entry"])),
      encoder.encode(String(rng.int(1, 1e6))),
      // Almost a WalEntry: a field of the wrong type, one missing, an unknown kind, a bad session id.
      encoder.encode(
        JSON.stringify({ session_id: session, turn_id: "one", text: "hi", on_busy: "enqueue", submitted_at: 1 }),
      ),
      encoder.encode(JSON.stringify({ session_id: session, turn_id: 2, on_busy: "enqueue", submitted_at: 1 })),
      encoder.encode(
        JSON.stringify({ session_id: session, turn_id: 3, text: "hi", on_busy: "dream", submitted_at: 1 }),
      ),
      encoder.encode(
        JSON.stringify({
          session_id: "no spaces allowed",
          turn_id: 4,
          text: "hi",
          on_busy: "enqueue",
          submitted_at: 1,
        }),
      ),
      Uint8Array.from(Array.from({ length: rng.int(4, 32) }, () => rng.pick([0xff, 0xfe, 0xc0, 0x80]))),
    ];
    const before = await count(WAL_LETTERS);
    // The runner role writes the WAL (a client may not): published as it.
    const js = jetstream(runnerRole);
    for (const payload of garbage) await js.publish(walSubject(session), payload);
    const publishedAt = Date.now();

    expect(
      await eventually(
        () => count(WAL_LETTERS),
        (n) => n >= before + garbage.length,
      ),
    ).toBe(before + garbage.length);
    expect({ runner: live.child.exitCode, worker: worker.child.exitCode }).toEqual({ runner: null, worker: null });

    // Terminated at once, so never delivered again, and gone from the work queue.
    const settled = await eventually(
      async () => ({ consumer: await consumerState(), stored: await walStored(session) }),
      ({ consumer, stored }) => consumer.num_pending === 0 && consumer.num_ack_pending === 0 && stored[session] === 0,
      { timeoutMs: SETTLE_MS },
    );
    expect
      .soft(settled, `WAL settled within ${SETTLE_MS} ms`)
      .toEqual({ consumer: { num_pending: 0, num_ack_pending: 0 }, stored: { [session]: 0 } });

    // The runner still serves: an ordinary turn of the same session completes.
    const completed = await watchTurn(
      client,
      await submitTurn(client, session, { text: "still there?" }),
      () => {},
      20_000,
    );
    expect(completed.payload.outcome).toEqual({ status: "Complete" });
    expect(completed.turn_id).toBe(1);

    // Past the ack wait: no garbage was delivered (and dead-lettered) again.
    await sleep(Math.max(0, publishedAt + WAL_ACK_WAIT_MS + 1_000 - Date.now()));
    expect.soft(await count(WAL_LETTERS), "wal dead letters after the ack wait").toBe(before + garbage.length);
    expect.soft(await walStored(session), "WAL after the ack wait").toEqual({ [session]: 0 });
    expect(live.child.exitCode).toBeNull();

    // What was kept, read back as the read-only observer with a JetStream consumer.
    const letters = (await readDeadLetters(observer, WAL_LETTERS)).filter(
      ({ letter }) => letter.subject === walSubject(session),
    );
    expect(letters).toHaveLength(garbage.length);
    for (const { letter } of letters) {
      expect(letter.code).toBe("invalid_request");
      expect(letter.reason.length).toBeGreaterThan(10);
    }
    expect(letters.map(({ letter }) => letter.data).sort()).toEqual(
      garbage.map((payload) => decoder.decode(payload)).sort(),
    );
  });
});
