/**
 * The worker's side of a traced request (src/bus/serveActor.ts): a server
 * span per request handled, the child of the requester's span whose context
 * came in the request's headers, and the active span while the request's
 * actor runs, so the agent, model and tool spans it makes are its children.
 */

import type { MsgHdrs } from "@nats-io/nats-core";
import { SpanKind, trace } from "@opentelemetry/api";
import { contextFromHeaders } from "../telemetry/natsHeaders.ts";
import { inSpan, recordFailure, tracingActive } from "../telemetry/tracer.ts";
import { requestSpanOf } from "./requestSpans.ts";

/** Handles one request (`handle`, which answers it and never throws) inside a server span. */
export function serveInSpan(
  msg: { subject: string; headers: MsgHdrs | undefined },
  handle: () => Promise<void>,
): Promise<void> {
  const { name, attributes } = requestSpanOf(msg.subject, undefined);
  return inSpan(name, { kind: SpanKind.SERVER, attributes }, handle, contextFromHeaders(msg.headers));
}

/** Marks the active span failed (a request answered with an error); nothing while tracing is off. */
export function failActiveSpan(error: unknown): void {
  if (!tracingActive()) return;
  const span = trace.getActiveSpan();
  if (span?.isRecording()) recordFailure(span, error);
}
