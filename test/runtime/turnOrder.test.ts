/**
 * A session's turn order when a runner takes the session over
 * (src/runtime/runner/turnOrder.ts): a later turn waits for an earlier one
 * still to be delivered, past the wait, as long as the WAL holds the earlier
 * turn's entry, and goes ahead once that turn ended or can no longer come.
 * Statuses it cannot read (NATS away) let no later turn go.
 * The wait's clock is moved on (only `Date` is faked: NATS keeps its timers).
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { encodeJson } from "../../src/bus/codec.ts";
import { DEFAULT_PARTITIONS } from "../../src/contracts/partitions.ts";
import type { WalEntry } from "../../src/contracts/wal.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { ensureTurnWal, walTurnIds } from "../../src/eventlog/turnWal.ts";
import { TURN_ORDER_WAIT_MS, TurnOrder } from "../../src/runtime/runner/turnOrder.ts";
import { SessionStore } from "../../src/runtime/sessionStore.ts";
import { type Logger, silentLogger } from "../../src/telemetry/log.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { walSubject } from "../helpers/wal.ts";

const nats = useNatsServer();
let order: TurnOrder;
let statuses: TurnStatusStore;
let sessions: SessionStore;
const warnings: string[] = [];

beforeAll(async () => {
  const nc = await nats.connect("runner");
  const jsm = await jetstreamManager(nc);
  await ensureTurnWal(jsm);
  [statuses, sessions] = await Promise.all([TurnStatusStore.open(nc), SessionStore.open(nc)]);
  const log: Logger = { ...silentLogger, warn: (message: string) => warnings.push(message) };
  order = new TurnOrder({
    store: sessions,
    statuses,
    log,
    walTurnIds: (sessionId) => walTurnIds(jsm, sessionId, DEFAULT_PARTITIONS),
  });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Accepts turns 1 and 2 of `sessionId` (pending), with WAL entries for `inWal` of them. */
async function accept(sessionId: string, inWal: number[]): Promise<void> {
  const js = jetstream(await nats.connect("runner"));
  for (const turnId of [1, 2]) {
    await sessions.reserveTurnId(sessionId);
    await statuses.pending(sessionId, turnId, Date.now());
    if (!inWal.includes(turnId)) continue;
    const entry: WalEntry = { session_id: sessionId, turn_id: turnId, text: "hi", on_busy: "enqueue", submitted_at: 0 };
    await js.publish(walSubject(sessionId), encodeJson(entry), { msgID: `${sessionId}.${turnId}` });
  }
}

/** Moves the clock past the order's wait. */
function waitPasses(): void {
  vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + TURN_ORDER_WAIT_MS + 1_000 });
}

describe("a session's turn order on the runner that takes it", () => {
  it("keeps a later turn waiting past the wait while the earlier one's entry is in the WAL, until that turn ends", async () => {
    await accept("order-held", [1, 2]);
    expect(
      await walTurnIds(await jetstreamManager(await nats.connect("runner")), "order-held", DEFAULT_PARTITIONS),
    ).toEqual([1, 2]);
    expect(await order.mayRun("order-held", 2)).toBe(false);
    waitPasses();
    expect(await order.mayRun("order-held", 2)).toBe(false);

    // Turn 1 ends on another runner: the next look lets turn 2 go.
    await statuses.finish("order-held", 1, "done", { outcome: "Complete" });
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 2 * (TURN_ORDER_WAIT_MS + 1_000) });
    expect(await order.mayRun("order-held", 2)).toBe(true);
    expect(warnings.filter((line) => line.includes("order-held"))).toEqual([]);
  });

  it("lets a later turn go once the wait passes when the earlier turn's entry is gone", async () => {
    await accept("order-gone", [2]);
    expect(await order.mayRun("order-gone", 2)).toBe(false);
    expect(await order.mayRun("order-gone", 1)).toBe(true); // nothing earlier than turn 1
    waitPasses();
    expect(await order.mayRun("order-gone", 2)).toBe(true);
    expect(warnings).toContainEqual(
      expect.stringContaining("order-gone: turn 1 is accepted but its WAL entry is gone"),
    );
  });

  it("lets a later turn go at once when the earlier turn reached this runner", async () => {
    await accept("order-arrived", [1, 2]);
    expect(await order.mayRun("order-arrived", 2)).toBe(false);
    order.arrived("order-arrived", 1);
    await vi.waitFor(async () => expect(await order.mayRun("order-arrived", 2)).toBe(true));
  });

  it("lets no later turn go while the earlier turns' statuses cannot be read (NATS away), and surveys again", async () => {
    await accept("order-unread", [1, 2]);
    // The statuses over a connection that is gone: every read fails as when NATS is out of reach.
    const gone = await nats.connect("runner");
    const unreadable = await TurnStatusStore.open(gone);
    await gone.close();
    const blind = new TurnOrder({
      store: sessions,
      statuses: unreadable,
      log: silentLogger,
      walTurnIds: async () => [1, 2],
    });
    await expect(blind.mayRun("order-unread", 2)).rejects.toThrow();
    // The failed survey is not kept: the next look reads again (here, through a live connection).
    expect(await order.mayRun("order-unread", 2)).toBe(false);
  });
});
