/**
 * Conclave's tracer and the few helpers every traced place uses. Spans go
 * through `@opentelemetry/api` to whatever provider the process registered:
 * the one `setupTracing` registers in a Conclave process, a library user's own,
 * or none, in which case nothing is traced and `tracingActive()` is false.
 */
import {
  type Context,
  context,
  ProxyTracerProvider,
  type Span,
  type SpanOptions,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";
import { scrubError, scrubSecrets } from "../config/secrets.ts";
import { codeOf, messageOf } from "../errors.ts";

/** The instrumentation scope of every span Conclave makes. */
export const TRACER_NAME = "conclave";

/** The provider the API answers with while none is registered (the same object every time). */
const NOOP_PROVIDER: TracerProvider = new ProxyTracerProvider().getDelegate();

/**
 * True when a tracer provider is registered, so spans are recorded somewhere.
 * Cheap (a global lookup, no allocation): the hot paths ask it before they
 * make a span or a header, and do neither when it is false.
 */
export function tracingActive(): boolean {
  const provider = trace.getTracerProvider() as TracerProvider & { getDelegate?: () => TracerProvider };
  return (typeof provider.getDelegate === "function" ? provider.getDelegate() : provider) !== NOOP_PROVIDER;
}

let tracer: Tracer | undefined;

/** Conclave's tracer (a proxy until a provider is registered, then that provider's). */
export function conclaveTracer(): Tracer {
  tracer ??= trace.getTracer(TRACER_NAME);
  return tracer;
}

/**
 * Marks a span failed with the error's message (and code, when it has one), and records the exception.
 * Message and stack are scrubbed of secrets first (config/secrets.ts): spans go to a collector many can read.
 */
export function recordFailure(span: Span, error: unknown): void {
  const message = scrubSecrets(messageOf(error));
  const code = codeOf(error);
  if (code !== undefined) span.setAttribute("error.type", code);
  else if (error instanceof Error) span.setAttribute("error.type", error.name);
  if (error instanceof Error) span.recordException(scrubError(error) as Error);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/**
 * Runs `work` in a new span (the active one while it runs, so the spans and
 * requests it makes are its children), ended when `work` settles; a failure
 * marks it failed and is rethrown. `parent` defaults to the active context.
 */
export function inSpan<T>(
  name: string,
  options: SpanOptions,
  work: (span: Span) => Promise<T>,
  parent: Context = context.active(),
): Promise<T> {
  return conclaveTracer().startActiveSpan(name, options, parent, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      recordFailure(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}
