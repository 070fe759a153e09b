import type { NatsConnection } from "@nats-io/nats-core";
import { requestStream } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import { EngineEvent } from "../contracts/events.ts";

export type TurnCompleted = Extract<EngineEvent, { kind: "TURN_COMPLETED" }>;

/** Extra time the exchange may take over the runner's own deadline, for the last replies to arrive. */
const SLACK_MS = 2_000;

/**
 * Reads a turn's events through a runner (`conclave.turn.watch.<session>`),
 * stored ones first, then live ones, until its `TURN_COMPLETED`, which it
 * returns. This is how a tenant reads — its account has no JetStream, and
 * sees only its own sessions — and it works as well for a client of the
 * runtime's own account. Failures are RemoteCallErrors (`timeout` when the
 * turn did not complete in time, `no_responders` when no runner is up).
 */
export async function watchTurnThroughRunner(
  nc: NatsConnection,
  sessionId: string,
  turnId: number,
  onEvent: (event: EngineEvent) => void,
  timeoutMs = 60_000,
): Promise<TurnCompleted> {
  let completed: TurnCompleted | null = null;
  await requestStream(
    nc,
    subjects.turnWatch(sessionId),
    { turn_id: turnId, follow: true, timeout_ms: timeoutMs },
    EngineEvent,
    (message) => {
      // The schema's inferred type is wider than EngineEvent's declared union; it validated the same shape.
      const event = message as EngineEvent;
      onEvent(event);
      if (event.kind === "TURN_COMPLETED") completed = event;
    },
    { timeoutMs: timeoutMs + SLACK_MS },
  );
  if (!completed) throw new Error(`turn ${sessionId}/${turnId} did not complete within ${timeoutMs} ms`);
  return completed;
}

/** The stored events of a session (or of one turn), read through a runner, without following. */
export async function readThroughRunner(
  nc: NatsConnection,
  sessionId: string,
  options: { turnId?: number; timeoutMs?: number } = {},
): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  const timeoutMs = options.timeoutMs ?? 10_000;
  await requestStream(
    nc,
    subjects.turnWatch(sessionId),
    { ...(options.turnId === undefined ? {} : { turn_id: options.turnId }), follow: false, timeout_ms: timeoutMs },
    EngineEvent,
    (message) => events.push(message as EngineEvent),
    { timeoutMs: timeoutMs + SLACK_MS },
  );
  return events;
}
