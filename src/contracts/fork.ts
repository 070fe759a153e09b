/** The wire contract of a session fork (`conclave.session.fork.<session>`, docs/tape.md). */
import { z } from "zod";
import { SessionId, TurnId } from "./ids.ts";

/**
 * Where the fork starts: after a turn, or at a stream position of the
 * source's log (its CONCLAVE_EVENTS_<i> sequence): the last turn completed by then.
 */
export const ForkPoint = z.union([
  z.object({ turn: TurnId }).strict(),
  z.object({ seq: z.number().int().min(1) }).strict(),
]);
export type ForkPoint = z.infer<typeof ForkPoint>;

/** A fork request: the fork point, and the new session's id. */
export const ForkRequest = z.object({ at: ForkPoint, as: SessionId }).strict();
export type ForkRequest = z.infer<typeof ForkRequest>;

/** What a fork made: the new session, where it came from, and what was copied (per store: entries). */
export const ForkRecord = z.object({
  session_id: SessionId,
  from_session: SessionId,
  at_turn: TurnId,
  /** The new session's next turn. */
  next_turn_id: TurnId,
  copied: z.record(z.string(), z.number().int().min(0)),
});
export type ForkRecord = z.infer<typeof ForkRecord>;
