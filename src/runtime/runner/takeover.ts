import type { JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import type { EngineEvent } from "../../contracts/events.ts";
import type { AgentsPipeline } from "../../contracts/pipeline.ts";
import { turnKey, turnLabel } from "../../contracts/turnKey.ts";
import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import type { WalEntry } from "../../contracts/wal.ts";
import { ConclaveError, messageOf } from "../../errors.ts";
import { readEvents } from "../../eventlog/reader.ts";
import { MAX_TURN_ATTEMPTS } from "../../eventlog/streams.ts";
import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import type { EventLogWriter } from "../../eventlog/writer.ts";
import { type Logger, turnFields } from "../../telemetry/log.ts";
import { decideRedelivery, decideTakeover, type StoredTurn, type TakeResult } from "./delivery.ts";
import type { TurnSettlement } from "./settlement.ts";

/** What an earlier attempt stored of a turn, and where its subject stands in the stream (to fence on). */
export interface StoredForTakeover extends StoredTurn {
  events: EngineEvent[];
  /** The stream sequence of the turn's last stored message (0 when none): the next writer expects it. */
  lastStreamSeq: number;
}

/** Reads a turn's stored events before a runner takes it over. */
export async function readForTakeover(
  js: JetStreamClient,
  jsm: JetStreamManager,
  sessionId: string,
  turnId: number,
): Promise<StoredForTakeover> {
  let lastStreamSeq = 0;
  const events = await readEvents(js, jsm, sessionId, turnId, {
    onStreamSeq: (seq) => {
      lastStreamSeq = Math.max(lastStreamSeq, seq);
    },
  });
  return { events, kinds: events.map((event) => event.kind), lastSeq: events.at(-1)?.seq ?? -1, lastStreamSeq };
}

/**
 * A turn of the built-in pipeline (no recipe run): taken over, it goes on after its last recorded step.
 * A recipe run goes on from its own checkpoints.
 */
export function isPipelineTurn(entry: WalEntry, stored: readonly EngineEvent[]): boolean {
  // A resumed entry is a pipeline turn's too when its log holds no recipe run (an approval answered).
  return entry.recipe === undefined && !stored.some((event) => event.kind === "RECIPE_STARTED");
}

/** What taking a redelivered turn needs: the runner's stores, its name, its settlement and its log writer. */
export interface RedeliveryDeps {
  js: JetStreamClient;
  jsm: JetStreamManager;
  statuses: TurnStatusStore;
  /** This runner's name, recorded in the turn's status as it takes it. */
  runner: string;
  settlement: TurnSettlement;
  writer: EventLogWriter;
  log: Logger;
  /** The turns this runner process took before: taking one again is no new attempt (`TurnStatusStore.take`). */
  takenHere?: TurnsTakenHere;
}

/** How many turns a runner remembers having taken (the most recent): far more than run at once. */
const TAKEN_REMEMBERED = 16_384;

/**
 * The turns this runner process has taken, most recent first out last. A turn it let go itself (its
 * lease lapsed, a delivery failed) and takes again is its own attempt going on, not a takeover: it
 * must not count towards poison, or a runner that stalls under load would fail its own turns.
 */
export class TurnsTakenHere {
  readonly #keys = new Set<string>();

  add(sessionId: string, turnId: number): void {
    const key = turnKey(sessionId, turnId);
    this.#keys.delete(key);
    this.#keys.add(key);
    if (this.#keys.size > TAKEN_REMEMBERED) this.#keys.delete(this.#keys.values().next().value as string);
  }

  has(sessionId: string, turnId: number): boolean {
    return this.#keys.has(turnKey(sessionId, turnId));
  }
}

/** A redelivered turn to run here: why it was cancelled (if it was), and what earlier attempts stored of it. */
export interface TakenTurn {
  cancelReason?: string;
  events: EngineEvent[];
}

/**
 * A delivery after the first: poison (dead-lettered), a late duplicate
 * (acked), a turn that completed before the takeover (settled), or one to
 * run here — returned, held, with its log reopened after what is stored
 * (and TURN_RESUMED recorded when it goes on from there). Null: it is settled.
 */
export async function takeRedelivered(
  deps: RedeliveryDeps,
  msg: JsMsg,
  entry: WalEntry,
  /** The status take already made for this delivery (a `start_if_unattempted` one), else made here. */
  taken?: TakeResult,
): Promise<TakenTurn | null> {
  const { session_id: sessionId, turn_id: turnId } = entry;
  const take = taken ?? (await takeStatus(deps, entry));
  const action = decideRedelivery(take);
  if (action.kind === "poison") {
    // A turn whose end is stored completed: it is settled as done, never failed as poison.
    const stored = await readForTakeover(deps.js, deps.jsm, sessionId, turnId);
    if (decideTakeover(stored).kind === "settle_done") {
      await deps.settlement.settle(
        sessionId,
        turnId,
        { status: "done", outcome: "completed before the takeover" },
        { msg },
      );
      return null;
    }
    const reason = `poison: started ${MAX_TURN_ATTEMPTS} times without finishing`;
    deps.log.warn(
      `${turnLabel(sessionId, turnId)} is poison: moved to the dead-letter stream`,
      turnFields(sessionId, turnId),
    );
    await deps.settlement.settle(
      sessionId,
      turnId,
      { status: "failed", reason, deadLetter: { source: "poison", code: "internal" }, terminate: true },
      { msg },
    );
    return null;
  }
  if (action.kind === "already_settled") {
    msg.ack();
    return null;
  }
  // A takeover even when its delivery count says first (an entry handed back while nobody pulled its partition).
  deps.settlement.hold(msg, entry, { takeover: true });
  // Its own attempt going on (a delivery failed here after the take): what that attempt began writing is
  // stored, or failed, before the log is read, so it is read back rather than written a second time.
  if (take.ownRetake) await deps.writer.flushed(sessionId, turnId).catch(() => {});
  deps.writer.abandon(sessionId, turnId);
  const stored = await readForTakeover(deps.js, deps.jsm, sessionId, turnId);
  const takeover = decideTakeover({
    ...stored,
    unstartedResume: entry.resume !== undefined && take.before?.status === "pending" && take.before.attempts === 0,
  });
  if (takeover.kind === "settle_done") {
    await deps.settlement.settle(sessionId, turnId, { status: "done", outcome: "completed before the takeover" });
    return null;
  }
  // The writer keeps what is stored: a pipeline turn answers its recorded steps from it (`recordedSteps.ts`).
  deps.writer.open(sessionId, turnId, stored.events, stored.lastStreamSeq);
  // Nothing stored since this runner's own TURN_RESUMED: that one still marks where this attempt goes on.
  const resumedAlready = take.ownRetake && stored.events.at(-1)?.kind === "TURN_RESUMED";
  if (takeover.kind === "resume" && !resumedAlready) {
    deps.writer.append(sessionId, turnId, {
      kind: "TURN_RESUMED",
      payload: {
        attempt: action.attempt,
        after_seq: takeover.afterSeq,
        ...(action.previousRunner ? { previous_runner: action.previousRunner } : {}),
        ...(isPipelineTurn(entry, stored.events) ? { from: "last_step" as const } : {}),
      },
    });
    deps.log.warn(
      `${turnLabel(sessionId, turnId)} taken over from ${action.previousRunner ?? "a lost runner"} (attempt ${action.attempt})`,
      turnFields(sessionId, turnId),
    );
  }
  const cancelReason = take.before?.cancel_reason;
  return { ...(cancelReason !== undefined ? { cancelReason } : {}), events: stored.events };
}

/** Records this runner's attempt at the turn in its status (`TurnStatusStore.take`): the record as it was. */
export function takeStatus(
  deps: Pick<RedeliveryDeps, "statuses" | "runner" | "takenHere">,
  entry: WalEntry,
): Promise<TakeResult> {
  const { session_id: sessionId, turn_id: turnId, submitted_at, suspension_seq } = entry;
  const retake = deps.takenHere?.has(sessionId, turnId) ?? false;
  deps.takenHere?.add(sessionId, turnId);
  return deps.statuses.take(sessionId, turnId, deps.runner, submitted_at, MAX_TURN_ATTEMPTS, suspension_seq, retake);
}

/**
 * A first delivery's turn, started, recorded inflight (one more attempt) without the turn waiting: the
 * write goes out just after the turn's first requests (they leave within this tick's promise jobs), so
 * it takes no round trip of its own. A takeover reads the attempts it counts.
 */
export function recordTaken(
  deps: Pick<RedeliveryDeps, "statuses" | "runner" | "log" | "takenHere">,
  entry: WalEntry,
): void {
  const { session_id: sessionId, turn_id: turnId } = entry;
  setImmediate(() =>
    takeStatus(deps, entry).catch((error: unknown) =>
      deps.log.warn(
        `${turnLabel(sessionId, turnId)}: status not recorded: ${messageOf(error)}`,
        turnFields(sessionId, turnId),
      ),
    ),
  );
}

/**
 * A suspended pipeline turn answered (its WAL entry resumes a turn whose log holds no recipe run):
 * its message and user, from its TURN_STARTED, and the answer to record (once: a takeover of the
 * resumed turn finds it after the suspension already). A ConclaveError when the log holds no TURN_STARTED.
 */
export function resumedPipelineTurn(
  entry: WalEntry,
  stored: readonly EngineEvent[],
): { text: string; user_id?: string; pipeline?: AgentsPipeline; record?: TurnRecord } | ConclaveError {
  const started = stored.find((event) => event.kind === "TURN_STARTED");
  if (started?.kind !== "TURN_STARTED" || !entry.resume)
    return new ConclaveError("corrupt_value", "a resumed turn whose log holds no TURN_STARTED");
  const suspendedAt = stored.findLastIndex((event) => event.kind === "TURN_SUSPENDED");
  const recorded = stored.slice(suspendedAt + 1).some((event) => event.kind === "HUMAN_INPUT_RECEIVED");
  return {
    text: started.payload.user_input,
    ...(started.payload.user_id ? { user_id: started.payload.user_id } : {}),
    ...(started.payload.pipeline ? { pipeline: started.payload.pipeline } : {}),
    ...(recorded ? {} : { record: { kind: "HUMAN_INPUT_RECEIVED" as const, payload: entry.resume } }),
  };
}
