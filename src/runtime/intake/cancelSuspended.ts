import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { subjects } from "../../bus/subjects.ts";
import { publishJson } from "../../bus/wire.ts";
import type { TurnCancelled } from "../../contracts/turn.ts";
import { turnLabel } from "../../contracts/turnKey.ts";
import { usageSummary } from "../../contracts/turnProtocol.ts";
import type { TurnStatusRecord } from "../../contracts/wal.ts";
import { singleLine } from "../../errors.ts";
import { eventStreamCount } from "../../eventlog/eventStreams.ts";
import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import { EventLogWriter } from "../../eventlog/writer.ts";
import type { Logger } from "../../telemetry/log.ts";
import type { SuspensionTimers } from "../recipeHost/suspensionTimers.ts";
import { readForTakeover } from "../runner/takeover.ts";
import type { SessionStore } from "../sessionStore.ts";

/** What ending a suspended turn needs: the stores its end is written to, and the timers that might answer it. */
export interface SuspendedCancelDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  statuses: TurnStatusStore;
  /** The session's done mark (a later `on_busy: reject` turn finds the session free). */
  sessions: Pick<SessionStore, "markDone">;
  /** The human node's timeout, forgotten: nothing answers the turn any more. */
  timers: Pick<SuspensionTimers, "forget">;
  log: Logger;
}

/**
 * Ends a suspended turn — a recipe run waiting at a human node, or a turn
 * waiting for a tool call's approval — as `Cancelled`, without running it
 * again: no process holds a suspended turn, so the cancel records its end
 * itself.
 *
 * It claims the suspension as an answer does (`TurnStatusStore.resumeSuspended`,
 * suspended → pending, once per suspension: a person's answer, the node's
 * timeout and a cancel race for it, and one wins), marks the claim
 * cancelled (an answer arriving now is told the turn was cancelled), then
 * stores TURN_COMPLETED `{ status: "Cancelled", reason }` after the turn's
 * last stored event, fenced by the log writer on that event's stream
 * sequence (a writer that got there first wins, and this one stores
 * nothing). Then the status is `done` with outcome `Cancelled`, the
 * session's done mark is set, the node's timeout is forgotten, and every
 * runner and worker is told (a late copy of an answer's WAL entry ends at
 * once). When the end cannot be stored, the claim is undone: the turn waits
 * as before, and the error is thrown.
 *
 * Returns the status as the cancel left it; null when the turn was not in
 * the `suspension` given (answered, timed out or cancelled meanwhile): the
 * caller reads it again.
 */
export async function cancelSuspended(
  deps: SuspendedCancelDeps,
  suspended: TurnStatusRecord,
  reason: string,
): Promise<TurnStatusRecord | null> {
  const { session_id: sessionId, turn_id: turnId } = suspended;
  const before = await deps.statuses.resumeSuspended(sessionId, turnId, suspended.suspended?.seq);
  if (!before) return null;
  let outcome: string;
  try {
    await deps.statuses.requestCancel(sessionId, turnId, reason);
    outcome = await recordCancelled(deps, sessionId, turnId, reason);
  } catch (error) {
    await deps.statuses.reopenSuspension(sessionId, turnId, before).catch(() => false);
    throw error;
  }
  await deps.statuses.finish(sessionId, turnId, "done", { outcome, reason });
  await deps.sessions.markDone(sessionId, turnId).catch(() => {});
  await deps.timers.forget(sessionId, turnId);
  publishJson(deps.nc, subjects.turnCancelled, {
    session_id: sessionId,
    turn_id: turnId,
    reason,
  } satisfies TurnCancelled);
  deps.log.info(
    `${turnLabel(sessionId, turnId)}: cancelled while waiting at '${before.suspended?.node ?? "?"}' (${singleLine(reason, 200)})`,
  );
  return deps.statuses.get(sessionId, turnId);
}

/**
 * Stores the turn's TURN_COMPLETED (Cancelled) after what its log holds, fenced on its last stored event.
 * Returns the outcome the log ends with: `Cancelled`, or the one of an end stored already.
 */
async function recordCancelled(
  deps: Pick<SuspendedCancelDeps, "js" | "jsm">,
  sessionId: string,
  turnId: number,
  reason: string,
): Promise<string> {
  const { events: stored, lastStreamSeq } = await readForTakeover(deps.js, deps.jsm, sessionId, turnId);
  // Its end is stored already (its status written late): a turn has one end.
  const ended = stored.find((event) => event.kind === "TURN_COMPLETED");
  if (ended?.kind === "TURN_COMPLETED") return ended.payload.outcome.status;
  const writer = new EventLogWriter(deps.js, await eventStreamCount(deps.jsm));
  writer.open(sessionId, turnId, stored, lastStreamSeq);
  writer.append(sessionId, turnId, {
    kind: "TURN_COMPLETED",
    payload: { response: "", outcome: { status: "Cancelled", reason }, usage: usageSummary({}) },
  });
  await writer.finish(sessionId, turnId);
  return "Cancelled";
}
