/**
 * The runner's `conclave.turn` spans, one per turn it holds: begun when it
 * takes the turn's WAL entry, whose headers carry the submitter's context
 * (so the span is the child of the client's `conclave.turn.submit`), ended
 * when the turn is settled or handed back. The turn's stage spans and
 * requests find their parent here by session and turn (`turnContext`): the
 * turn runs in XState actors, where no async context follows it.
 */

import type { MsgHdrs } from "@nats-io/nats-core";
import { type Context, type Link, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { scrubSecrets } from "../config/secrets.ts";
import { CONCLAVE } from "./attributes.ts";
import { contextFromHeaders } from "./natsHeaders.ts";
import { conclaveTracer, tracingActive } from "./tracer.ts";

/** The name of the runner's span of a whole turn. */
export const TURN_SPAN = "conclave.turn";

interface TurnSpan {
  span: Span;
  context: Context;
}

const turns = new Map<string, TurnSpan>();
const keyOf = (sessionId: string, turnId: number) => `${sessionId}\u0000${turnId}`;

/** A WAL delivery, as far as its span needs it. */
export interface TurnDelivery {
  headers: MsgHdrs | undefined;
  info: { deliveryCount: number };
}

/**
 * Begins the turn's span when this runner takes its entry (nothing if it has
 * one already, or while tracing is off). Its parent is the submitter's
 * context, carried in the entry's headers: the WAL keeps them, so a turn
 * taken over from a runner that died is still in its trace, marked
 * `conclave.takeover`. An entry without them (submitted untraced, or a resumed
 * recipe run) starts a trace of its own.
 */
export function beginTurnSpan(delivery: TurnDelivery, turn: { session_id: string; turn_id: number }): void {
  if (!tracingActive()) return;
  const key = keyOf(turn.session_id, turn.turn_id);
  if (turns.has(key)) return;
  const parent = contextFromHeaders(delivery.headers);
  const submitted = trace.getSpanContext(parent);
  const takeover = delivery.info.deliveryCount > 1;
  // A takeover also links the submission, for backends that show links rather than follow parents.
  const links: Link[] = takeover && submitted ? [{ context: submitted }] : [];
  const span = conclaveTracer().startSpan(
    TURN_SPAN,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        [CONCLAVE.sessionId]: turn.session_id,
        [CONCLAVE.turnId]: turn.turn_id,
        ...(takeover ? { [CONCLAVE.takeover]: true } : {}),
      },
      links,
    },
    parent,
  );
  turns.set(key, { span, context: trace.setSpan(ROOT_CONTEXT, span) });
}

/** The context of the turn's span (its stages' parent), if this runner has one. */
export function turnContext(sessionId: string, turnId: number): Context | undefined {
  return turns.size === 0 ? undefined : turns.get(keyOf(sessionId, turnId))?.context;
}

/**
 * Ends the turn's span: `end` is how the turn left this runner (`done`,
 * `failed`, `expired`, `suspended`, or `handed_back` to be taken again).
 * A failed turn's span is marked failed with its reason.
 */
export function endTurnSpan(sessionId: string, turnId: number, end: { status: string; reason?: string }): void {
  if (turns.size === 0) return;
  const key = keyOf(sessionId, turnId);
  const held = turns.get(key);
  if (!held) return;
  turns.delete(key);
  held.span.setAttribute(CONCLAVE.turnEnd, end.status);
  if (end.status === "failed" || end.status === "expired")
    held.span.setStatus({ code: SpanStatusCode.ERROR, message: scrubSecrets(end.reason ?? end.status) });
  held.span.end();
}
