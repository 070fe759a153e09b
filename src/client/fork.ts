import type { NatsConnection } from "@nats-io/nats-core";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import { type ForkPoint, ForkRecord, ForkRequest } from "../contracts/fork.ts";
import { checkSessionId } from "../contracts/ids.ts";

/** What `fork` is given: the source session, the fork point, and the new session's id. */
export interface ForkOptions {
  /** The session to fork (it is only read). */
  session: string;
  /** After which turn: `{ turn }`, or `{ seq }` (a position of the source's log: the last turn completed by then). */
  at: ForkPoint;
  /** The new session's id: one never used. */
  as: string;
}

/**
 * Forks a session through a runner (docs/tape.md, "Fork"): a new session
 * whose state is the source's after the fork turn, across every domain, and
 * which goes on on its own. Resolves with what was made; rejects with
 * `conflict` when `as` is in use or the fork turn has not completed,
 * `not_found` when the session or the turn does not exist.
 */
export function forkSession(nc: NatsConnection, options: ForkOptions, timeoutMs: number): Promise<ForkRecord> {
  checkSessionId(options.session);
  const request = ForkRequest.parse({ at: options.at, as: options.as });
  // Copying a long session's memory and ledgers takes a while: the request outlives a default timeout.
  return requestJson(nc, subjects.sessionFork(options.session), request, ForkRecord, {
    timeoutMs: Math.max(timeoutMs, 60_000),
  });
}
