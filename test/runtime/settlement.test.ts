import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { encodeJson } from "../../src/bus/codec.ts";
import { streams } from "../../src/bus/subjects.ts";
import type { WalEntry } from "../../src/contracts/wal.ts";
import { ensureDeadLetterStream } from "../../src/eventlog/streams.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { ensureTurnWal } from "../../src/eventlog/turnWal.ts";
import { TurnSettlement } from "../../src/runtime/runner/settlement.ts";
import { SessionStore } from "../../src/runtime/sessionStore.ts";
import { silentLogger } from "../../src/telemetry/log.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { sessionConsumer, walSubject } from "../helpers/wal.ts";

const nats = useNatsServer();

beforeAll(async () => {
  const jsm = await jetstreamManager(await nats.connect("runner"));
  await Promise.all([ensureTurnWal(jsm), ensureDeadLetterStream(jsm)]);
});

describe("the turn settlement", () => {
  it("writes a turn's end once, however many paths end it at the same time", async () => {
    const nc = await nats.connect("runner");
    const js = jetstream(nc);
    const [statuses, sessions] = await Promise.all([TurnStatusStore.open(nc), SessionStore.open(nc)]);
    const entry: WalEntry = {
      session_id: "ledger",
      turn_id: 1,
      text: "hi",
      on_busy: "enqueue",
      submitted_at: Date.now(),
    };
    await sessions.reserveTurnId("ledger");
    await statuses.pending("ledger", 1, entry.submitted_at);
    await js.publish(walSubject("ledger"), encodeJson(entry), { msgID: "ledger.1" });
    const consumer = await js.consumers.get(streams.turns, sessionConsumer("ledger"));
    const msg = await consumer.next({ expires: 5_000 });
    expect(msg).not.toBeNull();

    const ledger = new TurnSettlement({ js, statuses, sessions, log: silentLogger });
    ledger.hold(msg!, entry);
    expect(ledger.holds("ledger", 1)).toBe(true);
    // The turn completes while a crash report for it arrives: one end is written, the first.
    const completed = ledger.settle("ledger", 1, { status: "done", outcome: "Complete" });
    const crashed = ledger.settle("ledger", 1, { status: "failed", reason: "late crash report" });
    expect(crashed).toBe(completed);
    await Promise.all([completed, crashed]);

    expect(await statuses.get("ledger", 1)).toMatchObject({ status: "done", outcome: "Complete" });
    expect(await sessions.busy("ledger")).toBe(false);
    expect(ledger.holds("ledger", 1)).toBe(false);
    const info = await (await jetstreamManager(nc)).consumers.info(streams.turns, sessionConsumer("ledger"));
    expect(info.num_ack_pending).toBe(0);
    expect((await (await jetstreamManager(nc)).streams.info(streams.turns)).state.messages).toBe(0);
  });
});
