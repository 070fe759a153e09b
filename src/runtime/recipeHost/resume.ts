import type { JetStreamClient } from "@nats-io/jetstream";
import { encodeRecord } from "../../bus/codec.ts";
import { HandlerError } from "../../bus/errors.ts";
import { subjects } from "../../bus/subjects.ts";
import type { HumanAnswer } from "../../contracts/recipeRun.ts";
import { turnKey } from "../../contracts/turnKey.ts";
import type { WalEntry } from "../../contracts/wal.ts";
import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";

/**
 * Resumes a suspended recipe run: its status goes suspended → pending (only
 * one answer wins: a person's or the timeout's), then a WAL entry carrying
 * the answer is stored, which any runner takes like a new turn and runs from
 * the checkpoint in the turn's log. The entry's message id is per
 * suspension, so a retried resume stores one copy. When the entry cannot be
 * stored, the status is put back to suspended, so a later answer is taken.
 */
export async function resumeSuspended(
  deps: { js: JetStreamClient; statuses: TurnStatusStore; partitions: number },
  sessionId: string,
  turnId: number,
  answer: HumanAnswer,
  seq?: number,
): Promise<{ node: string; seq: number }> {
  const before = await deps.statuses.resumeSuspended(sessionId, turnId, seq);
  if (!before?.suspended)
    throw new HandlerError("conflict", `turn ${sessionId}/${turnId} is not waiting for an answer (any more)`);
  const entry: WalEntry = {
    session_id: sessionId,
    turn_id: turnId,
    text: "",
    on_busy: "enqueue",
    submitted_at: Date.now(),
    resume: answer,
    suspension_seq: before.suspended.seq,
  };
  try {
    await deps.js.publish(subjects.walOf(sessionId, deps.partitions), encodeRecord(entry), {
      msgID: `${turnKey(sessionId, turnId)}.resume.${before.suspended.seq}`,
    });
  } catch (error) {
    // The answer was not stored: the run waits for one again, or no answer could ever resume it.
    await deps.statuses.reopenSuspension(sessionId, turnId, before);
    throw error;
  }
  return { node: before.suspended.node, seq: before.suspended.seq };
}
