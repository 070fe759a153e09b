/**
 * The client's span of a turn (src/client/turns.ts): `conclave.turn.submit`
 * around the submission, its context sent in the submit request's headers.
 * The runner's `conclave.turn` span is its child, so the whole turn, across
 * the runner and the workers, is one trace that starts where it was asked for.
 */

import { headers, type MsgHdrs } from "@nats-io/nats-core";
import { SpanKind } from "@opentelemetry/api";
import type { TurnAck } from "../contracts/turn.ts";
import { CONCLAVE } from "./attributes.ts";
import { traceHeaders } from "./natsHeaders.ts";
import { inSpan } from "./tracer.ts";

/** The name of the client's span around a submission. */
export const SUBMIT_SPAN = "conclave.turn.submit";

/** Submits (`send`, given the headers to send) inside the submit span; the ack's turn id is recorded on it. */
export function submitInSpan(sessionId: string, send: (headers: MsgHdrs) => Promise<TurnAck>): Promise<TurnAck> {
  return inSpan(
    SUBMIT_SPAN,
    { kind: SpanKind.PRODUCER, attributes: { [CONCLAVE.sessionId]: sessionId, "messaging.system": "nats" } },
    async (span) => {
      const ack = await send(traceHeaders() ?? headers());
      span.setAttribute(CONCLAVE.turnId, ack.turn_id);
      if (ack.duplicate) span.setAttribute("conclave.duplicate", true);
      return ack;
    },
  );
}
