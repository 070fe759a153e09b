/**
 * Tracing in a Conclave process, from the standard OpenTelemetry variables
 * (see config.ts): each process (`conclave runner`, `conclave worker`, the
 * client commands) calls `setupTracing` once at start with its default
 * service name, and `shutdown` on exit to send what is left. Off by default;
 * on, it registers a tracer provider exporting over OTLP/HTTP (or to the
 * console), the AsyncLocalStorage context manager (so the active span follows
 * awaits) and the W3C propagators. The SDK packages are optional peers,
 * imported only here and only when tracing is on.
 *
 * A library user's process is never set up by Conclave on its own: spans go
 * through `@opentelemetry/api` to the provider they registered, if any, or
 * the process calls `setupTracing` itself (e.g. beside `startRunner`).
 */
import {
  type ContextManager,
  context,
  DiagConsoleLogger,
  DiagLogLevel,
  diag,
  propagation,
  trace,
} from "@opentelemetry/api";
import { isSet, lenientSetting } from "../config/load.ts";
import { type OtlpProtocol, type TracesExporter, tracingConfigFromEnv } from "./config.ts";
import { loadTracingSdk } from "./sdkPackages.ts";
import { tracingActive } from "./tracer.ts";

/** What `setupTracing` takes. */
export interface TracingSetupOptions {
  /** The process's `service.name` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` give one. */
  serviceName: string;
  /**
   * Where the variables deciding whether tracing is on are read. Default: `process.env`. The SDK
   * itself reads its settings (endpoint, headers, batching) from `process.env`.
   */
  env?: NodeJS.ProcessEnv;
  /** Told about variables left out (an unknown exporter name). Default: a line on stderr. */
  onWarning?: (message: string) => void;
}

/** Tracing as `setupTracing` left it. */
export interface TracingHandle {
  /** True when this process traces (its provider, or one registered before). */
  readonly enabled: boolean;
  /** Why it is off, or where the spans go. */
  readonly description: string;
  /** Sends the spans not sent yet. */
  forceFlush(): Promise<void>;
  /** Sends what is left and unregisters the provider (bounded: an unreachable collector does not hold the exit). */
  shutdown(): Promise<void>;
}

/** How long `shutdown` waits for the last spans to go out. */
const SHUTDOWN_WAIT_MS = 5_000;

let current: TracingHandle | undefined;

/** A process's default `service.name`, by the NATS role it connects in: `conclave-runner`, `conclave-worker`, else `conclave-client`. */
export function tracingServiceName(role: string): string {
  return role === "runner" || role === "worker" ? `conclave-${role}` : "conclave-client";
}

/**
 * Sets tracing up from the standard OpenTelemetry variables, as the `conclave`
 * processes do: on when `OTEL_TRACES_EXPORTER` names `otlp` or `console`, or
 * an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); off with `OTEL_SDK_DISABLED=true`.
 * On, it registers a tracer provider exporting over OTLP/HTTP
 * (`OTEL_EXPORTER_OTLP_PROTOCOL` http/protobuf or http/json), the
 * AsyncLocalStorage context manager and the W3C propagators. Call it once at
 * start, before starting a runner or worker, and `shutdown()` on exit. Once per
 * process: a second call returns the first one's handle. A tracer provider
 * registered before it is left in place and used. Throws a
 * MissingDependencyError naming the packages to install when tracing is asked
 * for and one is missing, and a TracingConfigError for an OTLP protocol other
 * than http/protobuf or http/json.
 */
export async function setupTracing(options: TracingSetupOptions): Promise<TracingHandle> {
  if (current) return current;
  const env = options.env ?? process.env;
  const warn = options.onWarning ?? ((message: string) => process.stderr.write(`conclave: tracing: ${message}\n`));
  const config = tracingConfigFromEnv(env);
  for (const warning of config.warnings) warn(warning);
  if (!config.on) return offHandle(`tracing off: ${config.reason}`);
  if (tracingActive()) {
    warn("a tracer provider is registered already: its spans are used, none of the OTEL_* settings");
    return offHandle("tracing through the tracer provider registered before setup", true);
  }
  const handle = await startProvider(options.serviceName, config.exporters, config.protocol, env);
  current = handle;
  return handle;
}

function offHandle(description: string, enabled = false): TracingHandle {
  return { enabled, description, forceFlush: async () => {}, shutdown: async () => {} };
}

/** Imports the SDK (one error naming every package missing), registers it, and says how. */
async function startProvider(
  serviceName: string,
  exporters: TracesExporter[],
  protocol: OtlpProtocol,
  env: NodeJS.ProcessEnv,
): Promise<TracingHandle> {
  const { sdk, resources, hooks, core, exporter } = await loadTracingSdk(exporters.includes("otlp") ? protocol : null);
  // Unset or unknown: errors only (a logger setting must not stop a process; `conclave config` shows it refused).
  const logLevel = isSet(env, "OTEL_LOG_LEVEL")
    ? core.diagLogLevelFromString(lenientSetting(env, "OTEL_LOG_LEVEL"))
    : undefined;
  // The SDK reports a failed export through diag: errors on stderr unless OTEL_LOG_LEVEL says otherwise.
  diag.setLogger(new DiagConsoleLogger(), logLevel ?? DiagLogLevel.ERROR);
  const resource = resources
    .defaultResource()
    .merge(
      resources.resourceFromAttributes({
        "service.name": serviceName,
        // The pid and host tell processes apart; not the process detector's command line, which may hold a user's text.
        "process.pid": process.pid,
        "process.runtime.name": "nodejs",
        "process.runtime.version": process.versions.node,
      }),
    )
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
    .merge(resources.detectResources({ detectors: [resources.envDetector, resources.hostDetector] }));
  const spanProcessors = exporters.map(
    (name) =>
      // Batched; OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE… apply. The OTLP exporter reads its endpoint,
      // headers, timeout and compression from OTEL_EXPORTER_OTLP_(TRACES_)* itself.
      new sdk.BatchSpanProcessor(
        name === "otlp" && exporter ? new exporter.OTLPTraceExporter() : new sdk.ConsoleSpanExporter(),
      ),
  );
  const provider = new sdk.BasicTracerProvider({ resource, spanProcessors });
  const contextManager: ContextManager = new hooks.AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(
    new core.CompositePropagator({
      propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()],
    }),
  );
  trace.setGlobalTracerProvider(provider);
  const where = exporters.map((name) => (name === "otlp" ? `OTLP/HTTP (${protocol})` : "the console")).join(" and ");
  return {
    enabled: true,
    description: `tracing on: spans of ${serviceName} to ${where}`,
    forceFlush: () => provider.forceFlush(),
    shutdown: async () => {
      current = undefined;
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SHUTDOWN_WAIT_MS);
        timer.unref();
      });
      await Promise.race([provider.shutdown().catch(() => {}), waited]);
      clearTimeout(timer);
      trace.disable();
      propagation.disable();
      context.disable();
      diag.disable();
    },
  };
}
