/**
 * Whether a Conclave process traces, read from the standard OpenTelemetry
 * variables (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/).
 * Pure: the environment in, a decision out, so every case is unit-tested.
 * The variables' types are in src/config/schema.ts.
 */
import { isSet, setting } from "../config/load.ts";
import { ConclaveError } from "../errors.ts";

/** A tracing variable Conclave cannot honour (an OTLP protocol other than OTLP/HTTP). */
export class TracingConfigError extends ConclaveError<"config"> {
  constructor(message: string) {
    super("config", message);
  }
}

/** An OTLP/HTTP body encoding. */
export type OtlpProtocol = "http/protobuf" | "http/json";

/** The span exporters Conclave can set up. */
export type TracesExporter = "otlp" | "console";

/** What the environment asks for: tracing off (and why), or on with its exporters. */
export type TracingConfig =
  | { on: false; reason: string; warnings: string[] }
  | { on: true; exporters: TracesExporter[]; protocol: OtlpProtocol; warnings: string[] };

const KNOWN_EXPORTERS: readonly string[] = ["otlp", "console"];

/**
 * What the environment asks for. On when `OTEL_TRACES_EXPORTER` names
 * `otlp` or `console`, or, when it is unset, when an OTLP endpoint is set
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
 * `OTEL_SDK_DISABLED=true` always turns it off. Exporters it does not know
 * (zipkin, …) are left out with a warning; a protocol it cannot send (grpc, or
 * an unknown one) throws a TracingConfigError naming the variable.
 */
export function tracingConfigFromEnv(env: NodeJS.ProcessEnv = process.env): TracingConfig {
  const warnings: string[] = [];
  const read = <N extends "OTEL_SDK_DISABLED" | "OTEL_TRACES_EXPORTER">(name: N) =>
    setting(env, name, { error: tracingConfigError });
  if (read("OTEL_SDK_DISABLED")) return { on: false, reason: "OTEL_SDK_DISABLED=true", warnings };
  const listed = read("OTEL_TRACES_EXPORTER") ?? [];
  let exporters: TracesExporter[];
  if (listed.length > 0) {
    if (listed.includes("none")) return { on: false, reason: "OTEL_TRACES_EXPORTER=none", warnings };
    const unknown = listed.filter((name) => !KNOWN_EXPORTERS.includes(name));
    if (unknown.length > 0)
      warnings.push(`OTEL_TRACES_EXPORTER: ${unknown.join(", ")} not supported (only otlp and console): left out`);
    exporters = [...new Set(listed.filter((name): name is TracesExporter => KNOWN_EXPORTERS.includes(name)))];
    if (exporters.length === 0)
      return {
        on: false,
        reason: `OTEL_TRACES_EXPORTER=${env.OTEL_TRACES_EXPORTER} names no supported exporter`,
        warnings,
      };
  } else if (isSet(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || isSet(env, "OTEL_EXPORTER_OTLP_ENDPOINT")) {
    exporters = ["otlp"];
  } else {
    return { on: false, reason: "no OTEL_TRACES_EXPORTER or OTLP endpoint set", warnings };
  }
  return { on: true, exporters, protocol: protocolOf(env), warnings };
}

const tracingConfigError = (message: string) => new TracingConfigError(message);

/** `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else http/protobuf. */
function protocolOf(env: NodeJS.ProcessEnv): OtlpProtocol {
  return (
    setting(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", { error: tracingConfigError }) ??
    setting(env, "OTEL_EXPORTER_OTLP_PROTOCOL", { error: tracingConfigError })
  );
}
