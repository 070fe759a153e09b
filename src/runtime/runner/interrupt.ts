import type { NatsConnection } from "@nats-io/nats-core";
import { subjects } from "../../bus/subjects.ts";
import { publishJson } from "../../bus/wire.ts";
import type { TurnCancelled } from "../../contracts/turn.ts";
import type { SessionActor } from "./sessionHost.ts";

/**
 * Double-texting `interrupt`: the session's running turn (if older than `byTurnId`) stops here, and
 * the workers stop its calls, told as for a cancellation (`conclave.turn.cancelled`; runners find that
 * turn already ended).
 */
export function interruptRunningTurn(
  nc: NatsConnection,
  session: SessionActor,
  sessionId: string,
  byTurnId: number,
): void {
  const running = session.getSnapshot().context.current?.turn_id;
  session.send({ type: "turn.interrupt", by_turn_id: byTurnId });
  if (running === undefined || running >= byTurnId) return;
  const stop: TurnCancelled = { session_id: sessionId, turn_id: running, reason: `interrupted by turn ${byTurnId}` };
  try {
    publishJson(nc, subjects.turnCancelled, stop);
  } catch {
    // The connection is closing: the workers' calls end at their own deadlines.
  }
}
