/**
 * Trace context across NATS hops: the active context written into a
 * message's headers (W3C `traceparent`, `tracestate`, `baggage`, through the
 * registered propagator) and read back on the other side.
 */
import { headers, Match, type MsgHdrs } from "@nats-io/nats-core";
import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type TextMapGetter,
  type TextMapSetter,
} from "@opentelemetry/api";
import { tracingActive } from "./tracer.ts";

const setter: TextMapSetter<MsgHdrs> = {
  set: (carrier, key, value) => carrier.set(key, value),
};

const getter: TextMapGetter<MsgHdrs | undefined> = {
  keys: (carrier) => carrier?.keys() ?? [],
  // Header names are matched without case: other NATS clients may send `Traceparent`.
  get: (carrier, key) => {
    if (!carrier?.has(key, Match.IgnoreCase)) return undefined;
    return carrier.get(key, Match.IgnoreCase);
  },
};

/** The W3C headers a context travels in: copied, alone, from a message to the next hop. */
const TRACE_HEADERS = ["traceparent", "tracestate", "baggage"] as const;

/** Headers carrying `ctx` (default: the active context); undefined when the propagator writes nothing. */
export function traceHeaders(ctx: Context = context.active()): MsgHdrs | undefined {
  const carrier = headers();
  propagation.inject(ctx, carrier, setter);
  return carrier.keys().length > 0 ? carrier : undefined;
}

/** The context a message's headers carry (its remote parent), or the root context when they carry none. */
export function contextFromHeaders(carrier: MsgHdrs | undefined): Context {
  if (!carrier) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier, getter);
}

/**
 * The trace headers of `carrier` alone, copied into new headers (to pass a
 * context on, e.g. from a submission to its WAL entry, without its other
 * headers); undefined when it has none.
 */
export function copyTraceHeaders(carrier: MsgHdrs | undefined): MsgHdrs | undefined {
  if (!carrier) return undefined;
  let copy: MsgHdrs | undefined;
  for (const name of TRACE_HEADERS) {
    if (!carrier.has(name, Match.IgnoreCase)) continue;
    copy ??= headers();
    copy.set(name, carrier.get(name, Match.IgnoreCase));
  }
  return copy;
}

/**
 * What a hop passes on of a message's trace context: its trace headers while
 * this process traces, else nothing (and nothing is allocated).
 */
export function carriedTraceHeaders(carrier: MsgHdrs | undefined): MsgHdrs | undefined {
  return carrier && tracingActive() ? copyTraceHeaders(carrier) : undefined;
}

/** Runs `handle` in the context a message's headers carry (the requester's span as the parent of what it does). */
export function inContextOf<T>(carrier: MsgHdrs | undefined, handle: () => T): T {
  return context.with(contextFromHeaders(carrier), handle);
}
