import { z } from "zod";
import { InvalidRequestError } from "../errors.ts";

/**
 * A session id is one NATS subject token: it appears verbatim in
 * `conclave.turn.submit.<session_id>` and `conclave.events.<i>.<session_id>.<turn_id>`,
 * and as a JetStream KV key, so it may not contain dots, wildcards or spaces.
 */
export const SessionId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, "session_id must be 1-64 characters of A-Z, a-z, 0-9, '_' or '-'");
export type SessionId = z.infer<typeof SessionId>;

/** Turns are numbered from 1 within a session and never reused. */
export const TurnId = z.number().int().min(1);
export type TurnId = z.infer<typeof TurnId>;

/**
 * Agent ids are one to three lowercase tokens joined by dots, e.g.
 * `emotion.stress` or `acme.weather`: they appear in `conclave.agent.<agent_id>`.
 */
export const AgentId = z
  .string()
  .max(64)
  .regex(
    /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*){0,2}$/,
    "agent id must be 1-3 lowercase tokens of a-z, 0-9 and '_' joined by dots, e.g. 'acme.weather'",
  );
export type AgentId = z.infer<typeof AgentId>;

/**
 * The longest budget a call on the wire (an agent's, a tool's) may give, in
 * ms: 10 minutes. Node's timers cannot wait over 2^31-1 ms (longer ones fire
 * at once), so an unbounded budget would become a 1 ms deadline.
 */
export const MAX_CALL_TIMEOUT_MS = 600_000;

/** Throws InvalidRequestError unless `sessionId` is a valid session id (1-64 of A-Z a-z 0-9 _ -). */
export function checkSessionId(sessionId: string): void {
  if (!SessionId.safeParse(sessionId).success)
    throw new InvalidRequestError(
      `bad session id ${JSON.stringify(sessionId).slice(0, 80)}: 1-64 characters of A-Z, a-z, 0-9, '_' or '-'`,
    );
}

/** Throws InvalidRequestError unless `turnId` is a turn id (a whole number from 1). */
export function checkTurnId(turnId: number): void {
  if (!TurnId.safeParse(turnId).success)
    throw new InvalidRequestError(`bad turn id ${String(turnId)}: a whole number from 1`);
}
