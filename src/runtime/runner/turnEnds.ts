import type { JsMsg } from "@nats-io/jetstream";
import { turnLabel } from "../../contracts/turnKey.ts";
import type { TurnOutput, TurnSuspension } from "../../contracts/turnProtocol.ts";
import { usageSummary } from "../../contracts/turnProtocol.ts";
import type { WalEntry } from "../../contracts/wal.ts";
import { type ConclaveError, messageOf, singleLine } from "../../errors.ts";
import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import type { EventLogWriter } from "../../eventlog/writer.ts";
import { type Logger, turnFields } from "../../telemetry/log.ts";
import type { SuspensionTimers } from "../recipeHost/suspensionTimers.ts";
import type { SessionSnapshot } from "../sessionStore.ts";
import type { Admission } from "./admission.ts";
import type { SessionHost } from "./sessionHost.ts";
import type { TurnSettlement } from "./settlement.ts";
import type { TurnOrder } from "./turnOrder.ts";

/**
 * How a runner ends the turns it ran: finished (its events flushed, the
 * session's snapshot saved, the WAL entry settled), suspended at a human
 * node, crashed, or unrunnable. A turn whose end cannot be stored is not
 * settled: the runner forgets the session (`resetSession`) and the turn is
 * taken again from what is stored.
 */
export class TurnEnds {
  constructor(
    private readonly deps: {
      statuses: Pick<TurnStatusStore, "get">;
      writer: EventLogWriter;
      sessions: SessionHost;
      settlement: TurnSettlement;
      order: TurnOrder;
      log: Logger;
      /** A replay checkpoint is saved every this many turns of a session. */
      checkpointEvery: number;
      /** Where suspensions with a timeout are kept, for every runner's timers. */
      timers: SuspensionTimers;
      /** Admission control: a turn's place frees as it ends, not once its end is stored (the next one starts meanwhile). */
      admission: Pick<Admission, "release">;
    },
  ) {}

  /**
   * Ends a turn that cannot run at all (its session's stored state is
   * unreadable): a `TURN_COMPLETED` with outcome `Failed` naming the error,
   * then the failed status. Other sessions are untouched.
   */
  async failUnrunnable(entry: WalEntry, error: ConclaveError): Promise<void> {
    const { session_id: sessionId, turn_id: turnId } = entry;
    const message = singleLine(error.message);
    this.deps.log.error(`${turnLabel(sessionId, turnId)} cannot run: ${message}`, turnFields(sessionId, turnId));
    this.deps.writer.append(sessionId, turnId, {
      kind: "TURN_COMPLETED",
      payload: {
        response: "",
        outcome: { status: "Failed", error: { code: error.code, message } },
        usage: usageSummary({}),
      },
    });
    const markedDone = this.deps.settlement.markDone(sessionId, turnId);
    await this.deps.writer.finish(sessionId, turnId);
    await this.deps.settlement.settle(sessionId, turnId, { status: "failed", reason: message }, { markedDone });
  }

  /**
   * A delivery of a turn this runner's session actor already ran (`reset_session`): acked when its status
   * shows it ended (a late copy whose first ack was lost); else its end was never settled, so the session is
   * restored from what is stored and the entry taken again at once.
   */
  async ranButNeverEnded(msg: JsMsg, sessionId: string, turnId: number): Promise<void> {
    const status = (await this.deps.statuses.get(sessionId, turnId))?.status;
    if (status === "done" || status === "failed" || status === "expired") {
      msg.ack();
      return;
    }
    this.deps.log.warn(
      `${turnLabel(sessionId, turnId)} ran here but never ended: restoring its session`,
      turnFields(sessionId, turnId),
    );
    this.resetSession(sessionId);
    msg.nak(0);
  }

  /** Forgets the session's actor and hands back its held turns: they are taken again from stored state. */
  resetSession(sessionId: string): void {
    this.deps.sessions.evict(sessionId);
    this.deps.order.forget(sessionId);
    this.deps.settlement.handBackSession(sessionId);
  }

  async finished(sessionId: string, output: TurnOutput, snapshot: SessionSnapshot): Promise<void> {
    const turnId = output.turn_id;
    this.deps.admission.release(sessionId, turnId);
    let markedDone: Promise<void> | undefined;
    try {
      const count = await this.deps.writer.finish(sessionId, turnId);
      // The session is free for `on_busy: reject` once its end is recorded (TURN_COMPLETED stored: what a client
      // can see first), ahead of the snapshot and the settling; not before, on the turn's own path.
      markedDone = this.deps.settlement.markDone(sessionId, turnId);
      const checkpoint =
        snapshot.turns_completed % this.deps.checkpointEvery === 0 ? { through_turn_id: turnId, snapshot } : undefined;
      await this.deps.sessions.save(sessionId, snapshot, checkpoint);
      await this.deps.settlement.settle(
        sessionId,
        turnId,
        { status: "done", outcome: output.outcome.status },
        { markedDone },
      );
      this.deps.log.info(
        `${turnLabel(sessionId, turnId)} ${output.outcome.status}: ${count} events stored`,
        turnFields(sessionId, turnId),
      );
    } catch (error) {
      // Not settled: what this runner believes of the session can no longer be trusted (its actor counts the
      // turn as run). Drop the actor and hand the session's turns back: the entry is delivered again, and the
      // turn is taken over from what is stored — resumed, or settled if its end was stored after all.
      this.deps.log.error(
        `${turnLabel(sessionId, turnId)} not settled: ${messageOf(error)}; it will be taken again`,
        turnFields(sessionId, turnId),
      );
      this.resetSession(sessionId);
    }
  }

  /**
   * A recipe run suspended at a human node: its log is flushed, its entry
   * leaves the WAL with status `suspended` (naming the node), and, when the
   * node has a timeout, every runner's timers learn of it. No process holds
   * the run; an answer (or the timeout) writes a new WAL entry.
   */
  async suspended(
    sessionId: string,
    output: { turn_id: number; suspended?: TurnSuspension },
    snapshot: SessionSnapshot,
  ): Promise<void> {
    const turnId = output.turn_id;
    this.deps.admission.release(sessionId, turnId);
    const suspended = output.suspended!;
    try {
      await this.deps.writer.finish(sessionId, turnId);
      await this.deps.sessions.save(sessionId, snapshot);
      if (suspended.expires_at !== undefined && suspended.seq !== undefined)
        await this.deps.timers.add({
          session_id: sessionId,
          turn_id: turnId,
          node: suspended.node,
          seq: suspended.seq,
          expires_at: suspended.expires_at,
        });
      await this.deps.settlement.settle(sessionId, turnId, {
        status: "suspended",
        suspended: {
          node: suspended.node,
          prompt: suspended.prompt,
          seq: suspended.seq ?? 0,
          ...(suspended.required_role ? { required_role: suspended.required_role } : {}),
          ...(suspended.expires_at !== undefined ? { expires_at: suspended.expires_at } : {}),
          ...(suspended.approval ? { approval: suspended.approval } : {}),
        },
      });
      this.deps.log.info(`${turnLabel(sessionId, turnId)} suspended at '${suspended.node}': waiting for an answer`);
    } catch (error) {
      this.deps.log.error(
        `${turnLabel(sessionId, turnId)} not suspended cleanly: ${messageOf(error)}; it will be taken again`,
        turnFields(sessionId, turnId),
      );
      this.resetSession(sessionId);
    }
  }

  async crashed(sessionId: string, turnId: number, error: unknown): Promise<void> {
    if (this.deps.writer.isFenced(sessionId, turnId)) {
      // Another runner took the turn over and is writing it: its end is that runner's to settle, not a failure.
      this.deps.log.warn(
        `${turnLabel(sessionId, turnId)} stopped here: another runner is running it (${messageOf(error)})`,
        turnFields(sessionId, turnId),
      );
      this.deps.writer.abandon(sessionId, turnId);
      this.resetSession(sessionId);
      return;
    }
    this.deps.log.error(`${turnLabel(sessionId, turnId)} crashed: ${messageOf(error)}`, turnFields(sessionId, turnId));
    this.deps.writer.abandon(sessionId, turnId);
    await this.deps.settlement.settle(sessionId, turnId, {
      status: "failed",
      reason: messageOf(error),
      deadLetter: { source: "turn", code: "internal" },
    });
  }
}
