import { SpanKind } from "@opentelemetry/api";
import { contextFromHeaders, traceHeaders } from "../src/telemetry/natsHeaders.ts";
import { inSpan, tracingActive } from "../src/telemetry/tracer.ts";
import { middle, round } from "./stats.ts";

/**
 * What tracing costs while it is off. The instrumentation is in the code
 * either way, so two deployments of the same code cannot show it: instead,
 * in the bench's own process (no tracer provider registered, so tracing is
 * off), each entry point a traced hop goes through is timed over many calls.
 */
export interface TracingEntryPoint {
  /** The call, e.g. `tracingActive()`. */
  name: string;
  /** What the hot path uses it for. */
  role: string;
  /** Median over the repetitions, ns per call (an async entry point: minus its bare work's cost). */
  nsPerCall: number;
}

export interface TracingOffMicro {
  calls: number;
  repetitions: number;
  entryPoints: TracingEntryPoint[];
  /** ns per span with tracing off when every entry point is paid for every span (an upper bound). */
  nsPerSpan: number;
}

/** Median ns per call of `call`, over `repetitions` runs of `calls` calls (after as many unmeasured). */
function timeSync(call: () => unknown, calls: number, repetitions: number): number {
  let sink = 0;
  const runs: number[] = [];
  for (let r = 0; r <= repetitions; r++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) if (call()) sink++;
    const ns = Number(process.hrtime.bigint() - started) / calls;
    if (r > 0) runs.push(ns); // the first run warms the JIT up
  }
  // Keeps `sink` alive so the calls are not optimised away.
  if (sink < 0) throw new Error("unreachable");
  return middle(runs) ?? Number.NaN;
}

async function timeAsync(call: () => Promise<unknown>, calls: number, repetitions: number): Promise<number> {
  const runs: number[] = [];
  for (let r = 0; r <= repetitions; r++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await call();
    if (r > 0) runs.push(Number(process.hrtime.bigint() - started) / calls);
  }
  return middle(runs) ?? Number.NaN;
}

/**
 * Times the tracing entry points with tracing off: the guard every traced
 * request and span site asks first (`tracingActive()`), the span helper
 * (`inSpan`, minus the bare work it wraps), the header injection
 * (`traceHeaders()`) and extraction (`contextFromHeaders`) of a NATS hop.
 * Refuses to run while a tracer provider is registered (it would time tracing on).
 */
export async function timeTracingOff(calls = 200_000, repetitions = 5): Promise<TracingOffMicro> {
  if (tracingActive()) throw new Error("a tracer provider is registered in the bench process: tracing is not off");
  const work = async () => 1;
  const options = { kind: SpanKind.CLIENT, attributes: { "messaging.system": "nats" } };
  const bare = await timeAsync(work, calls, repetitions);
  const entryPoints: TracingEntryPoint[] = [
    {
      name: "tracingActive()",
      role: "the guard before every traced request, span and header (src/bus/request.ts and the span sites)",
      nsPerCall: timeSync(() => tracingActive(), calls, repetitions),
    },
    {
      name: "inSpan(name, options, work)",
      role: "the span helper (start, make active, end), minus the bare async work it wraps",
      nsPerCall: Math.max(0, (await timeAsync(() => inSpan("bench", options, work), calls, repetitions)) - bare),
    },
    {
      name: "traceHeaders()",
      role: "header injection into a NATS request",
      nsPerCall: timeSync(() => traceHeaders(), calls, repetitions),
    },
    {
      name: "contextFromHeaders(undefined)",
      role: "header extraction by the serving side of a request without trace headers",
      nsPerCall: timeSync(() => contextFromHeaders(undefined), calls, repetitions),
    },
  ].map((entry) => ({ ...entry, nsPerCall: round(entry.nsPerCall, 1) }));
  return {
    calls,
    repetitions,
    entryPoints,
    nsPerSpan: round(
      entryPoints.reduce((sum, entry) => sum + entry.nsPerCall, 0),
      1,
    ),
  };
}
