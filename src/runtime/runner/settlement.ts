import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { deadLetter } from "../../bus/deadLetters.ts";
import { subjects } from "../../bus/subjects.ts";
import { publishJson } from "../../bus/wire.ts";
import type { ErrorCode } from "../../contracts/errors.ts";
import type { FormatTooNewError } from "../../contracts/format.ts";
import { TURN_TAKEN_OVER, type TurnEnded } from "../../contracts/turn.ts";
import { turnKey, turnLabel } from "../../contracts/turnKey.ts";
import type { TurnStatusRecord, WalEntry } from "../../contracts/wal.ts";
import { messageOf } from "../../errors.ts";
import { WAL_ACK_WAIT_MS } from "../../eventlog/streams.ts";
import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import { type Logger, turnFields } from "../../telemetry/log.ts";
import { beginTurnSpan, endTurnSpan } from "../../telemetry/turnSpans.ts";
import { redactPii } from "../interception/pii.ts";
import type { SessionStore } from "../sessionStore.ts";

/** How long an entry of a session another runner owns is handed back for. */
const DEFER_TO_OWNER_MS = 200;
/** A turn left to its session's owner is logged at every this many deliveries (about every 10 s). */
const DEFERRALS_SAID_EVERY = 50;

/** How a turn ended, as recorded in its status. */
export type TurnEnd =
  | { status: "done"; outcome: string }
  /** A recipe run waits for a person: its entry leaves the WAL; a resume writes a new one. */
  | { status: "suspended"; suspended: NonNullable<TurnStatusRecord["suspended"]> }
  | { status: "expired"; reason: string }
  | {
      status: "failed";
      reason: string;
      /** Keep the WAL entry as a dead letter, under `conclave.dlq.<source>`. */
      deadLetter?: { source: string; code: ErrorCode };
      /** Remove the entry from the WAL with `term` (it must never be delivered again) rather than `ack`. */
      terminate?: boolean;
    };

/** A WAL entry this runner holds while its turn waits or runs: kept alive until it is settled or handed back. */
interface HeldTurn {
  msg: JsMsg;
  entry: WalEntry;
  heartbeat: NodeJS.Timeout;
}

/**
 * The turn settlement: the one place a turn's end is written. Every path that
 * ends a turn — completed, crashed, expired, poison, found completed by a
 * takeover — goes through `settle`, which records the status, marks the
 * session's turn done, keeps a dead letter when asked, and removes the WAL
 * entry, exactly once per turn (a second `settle` of the same turn joins the
 * first). It also holds the WAL entries of turns queued or running here,
 * with a heartbeat so JetStream does not redeliver them while they run.
 */
export class TurnSettlement {
  readonly #held = new Map<string, HeldTurn>();
  readonly #settling = new Map<string, Promise<void>>();
  #idle: (() => void) | null = null;
  /** When a newer-format WAL entry was last reported (`leaveForNewer`). */
  #saidTooNewAt = 0;

  constructor(
    private readonly deps: {
      js: JetStreamClient;
      statuses: TurnStatusStore;
      sessions: SessionStore;
      log: Logger;
      /** Told when an entry is no longer held here (settled or handed back): its turn's place is free. */
      onReleased?: (sessionId: string, turnId: number) => void;
      /** Told once a turn's end is written (retention by count trims the session's oldest turn then). */
      onSettled?: (sessionId: string, turnId: number) => void;
      /** Where a turn's end is told to workers (`conclave.turn.ended`): its calls still open stop. Default: nowhere. */
      nc?: Pick<NatsConnection, "publish" | "isClosed">;
    },
  ) {}

  /**
   * Holds a delivered entry (or, delivered again while held, swaps in the newer handle). `takeover`: the
   * entry is taken over (a takeover found it attempted before), whatever its delivery count says.
   */
  hold(msg: JsMsg, entry: WalEntry, options: { takeover?: boolean } = {}): void {
    const key = turnKey(entry.session_id, entry.turn_id);
    const previous = this.#held.get(key);
    if (previous) clearInterval(previous.heartbeat);
    // Delivered again and not held here: an earlier attempt let it go or was lost. Its calls still open are
    // abandoned; told before this attempt's first request, on the same connection, so they stop and these do not.
    else if (this.deps.nc && (msg.info.redelivered || options.takeover))
      this.#announceEnd(entry.session_id, entry.turn_id, TURN_TAKEN_OVER);
    // Three signs of life per ack wait (500 ms): one lost or late does not get the entry redelivered.
    const heartbeat = setInterval(() => msg.working(), WAL_ACK_WAIT_MS / 3);
    heartbeat.unref();
    this.#held.set(key, { msg, entry, heartbeat });
    beginTurnSpan(msg, entry); // traced: the turn's span, the child of its submitter's
  }

  holds(sessionId: string, turnId: number): boolean {
    return this.#held.has(turnKey(sessionId, turnId));
  }

  /** True when an entry of any turn of the session is held (waiting, running, or ended and not yet settled). */
  holdsSession(sessionId: string): boolean {
    for (const held of this.#held.values()) if (held.entry.session_id === sessionId) return true;
    return false;
  }

  /** The WAL stream seq of the entry held for a turn, if any. */
  heldSeq(sessionId: string, turnId: number): number | undefined {
    return this.#held.get(turnKey(sessionId, turnId))?.msg.seq;
  }

  /** How many entries this runner holds. */
  get size(): number {
    return this.#held.size;
  }

  /** The held entry of a turn, if any. */
  entry(sessionId: string, turnId: number): WalEntry | undefined {
    return this.#held.get(turnKey(sessionId, turnId))?.entry;
  }

  /** Gives an entry back to the WAL unsettled: it is delivered again after `delayMs`. Not an end. */
  handBack(sessionId: string, turnId: number, delayMs = 1_000): void {
    this.#release(turnKey(sessionId, turnId), (msg) => msg.nak(delayMs));
    endTurnSpan(sessionId, turnId, { status: "handed_back" });
  }

  /**
   * Gives back an entry of a session another runner owns (only while a partition moves): its owner will
   * get it. With several runners a turn may land here more than once before it does (`npm run bench --
   * --cluster` measures what that costs); a shorter wait was tried and left out. Said now and then: a
   * session its owner never lets go would stall silently otherwise.
   */
  deferToOwner(msg: JsMsg, sessionId: string, turnId: number, ownerOf?: () => Promise<string | undefined>): void {
    msg.nak(DEFER_TO_OWNER_MS);
    const count = msg.info.deliveryCount;
    if (count % DEFERRALS_SAID_EVERY !== 0) return;
    const said = (owner?: string) =>
      this.deps.log.warn(
        `${turnLabel(sessionId, turnId)}: left ${count} times to the session's owner${owner ? ` ${owner}` : ""}`,
      );
    if (ownerOf) void ownerOf().then(said, () => said());
    else said();
  }

  /** Gives back every entry held for a session (its actor is gone, so they must be taken again). */
  handBackSession(sessionId: string, delayMs = 200): void {
    for (const held of [...this.#held.values()]) {
      if (held.entry.session_id === sessionId) this.handBack(sessionId, held.entry.turn_id, delayMs);
    }
  }

  /** Gives back everything held (on stop). */
  handBackAll(): void {
    for (const held of [...this.#held.values()]) this.handBack(held.entry.session_id, held.entry.turn_id, 0);
  }

  /** Marks the session's turn done ahead of its settling (so `on_busy: reject` sees it free at once); never rejects. */
  markDone(sessionId: string, turnId: number): Promise<void> {
    return this.deps.sessions.markDone(sessionId, turnId).catch((error: unknown) => {
      this.deps.log.warn(
        `${turnLabel(sessionId, turnId)}: done mark not stored yet: ${String(error)}`,
        turnFields(sessionId, turnId),
      );
    });
  }

  /**
   * Ends a turn: status, the session's done mark (unless `markedDone` says it
   * is already under way), the dead letter, and the WAL entry — once. `msg`
   * is the delivery to remove when the turn is not held (e.g. expired before
   * it was taken).
   */
  settle(
    sessionId: string,
    turnId: number,
    end: TurnEnd,
    options: { msg?: JsMsg; markedDone?: Promise<void> } = {},
  ): Promise<void> {
    const key = turnKey(sessionId, turnId);
    const running = this.#settling.get(key);
    if (running) return running;
    this.#announceEnd(sessionId, turnId, end.status);
    const settling = this.#write(sessionId, turnId, end, options)
      .then(() => this.deps.onSettled?.(sessionId, turnId))
      .finally(() => {
        this.#settling.delete(key);
        endTurnSpan(sessionId, turnId, end);
      });
    this.#settling.set(key, settling);
    return settling;
  }

  async #write(
    sessionId: string,
    turnId: number,
    end: TurnEnd,
    options: { msg?: JsMsg; markedDone?: Promise<void> },
  ): Promise<void> {
    const key = turnKey(sessionId, turnId);
    const msg = this.#held.get(key)?.msg ?? options.msg;
    if (end.status === "failed" && end.deadLetter && msg) {
      const lost = await deadLetter(this.deps.js, end.deadLetter.source, {
        subject: msg.subject,
        data: withoutPersonalData(msg.data),
        code: end.deadLetter.code,
        reason: end.reason,
      });
      if (lost) this.deps.log.error(`turn ${key}: dead letter not stored: ${lost.message}`);
    }
    await Promise.all([
      this.deps.statuses.finish(
        sessionId,
        turnId,
        end.status,
        end.status === "done"
          ? { outcome: end.outcome }
          : end.status === "suspended"
            ? { suspended: end.suspended }
            : { reason: end.reason },
      ),
      options.markedDone ?? this.deps.sessions.markDone(sessionId, turnId),
    ]);
    const terminate = end.status === "failed" && end.terminate;
    if (this.#held.has(key)) this.#release(key, (held) => (terminate ? held.term() : held.ack()));
    else if (msg) terminate ? msg.term() : msg.ack();
  }

  /** One core NATS message, no wait: workers abort the turn's calls still open (a lost message costs their deadlines). */
  #announceEnd(sessionId: string, turnId: number, reason: string): void {
    const nc = this.deps.nc;
    if (!nc || nc.isClosed()) return;
    const ended: TurnEnded = { session_id: sessionId, turn_id: turnId, reason };
    try {
      publishJson(nc, subjects.turnEnded, ended);
    } catch (error) {
      this.deps.log.warn(`${turnLabel(sessionId, turnId)}: end not told to workers: ${messageOf(error)}`);
    }
  }

  /** Removes an entry that is not a turn at all (invalid), keeping it as a dead letter. */
  /**
   * A WAL entry in a newer format than this runner reads (a rolling upgrade under way): handed back
   * for a runner of the newer release, never dropped. Said once a minute, not once a delivery.
   */
  leaveForNewer(msg: JsMsg, tooNew: FormatTooNewError): void {
    const now = Date.now();
    if (now - this.#saidTooNewAt >= 60_000) {
      this.#saidTooNewAt = now;
      this.deps.log.warn(`WAL entry ${msg.seq}: ${tooNew.message}; left for a runner of the newer release`);
    }
    msg.nak(5_000);
  }

  async rejectInvalid(msg: JsMsg, reason: string): Promise<void> {
    const lost = await deadLetter(this.deps.js, "wal", {
      subject: msg.subject,
      data: msg.data,
      code: "invalid_request",
      reason,
    });
    if (lost) this.deps.log.error(`WAL entry ${msg.seq}: dead letter not stored: ${lost.message}`);
    // term() without a reason: nats-server 2.9 ignores a +TERM that carries one.
    msg.term();
  }

  #release(key: string, how: (msg: JsMsg) => void): void {
    const held = this.#held.get(key);
    if (!held) return;
    clearInterval(held.heartbeat);
    this.#held.delete(key);
    how(held.msg);
    this.deps.onReleased?.(held.entry.session_id, held.entry.turn_id);
    if (this.#held.size === 0) this.#idle?.();
  }

  /** Resolves true once nothing is held, false after `timeoutMs`. */
  drain(timeoutMs: number): Promise<boolean> {
    if (this.#held.size === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.#idle = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A WAL entry as a dead letter keeps it: whole, so an operator can read the
 * turn back and resubmit it, but with the user's text PII-redacted, as the
 * event log stores it.
 */
function withoutPersonalData(data: Uint8Array): Uint8Array {
  try {
    const entry = JSON.parse(decoder.decode(data)) as { text?: unknown };
    if (typeof entry.text !== "string") return data;
    return encoder.encode(JSON.stringify({ ...entry, text: redactPii(entry.text).text }));
  } catch {
    return data;
  }
}
