/**
 * Whether a Conclave process traces, read from the standard OpenTelemetry
 * variables (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/).
 * Pure: the environment in, a decision out, so every case is unit-tested.
 */
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
const PROTOCOLS: readonly string[] = ["http/protobuf", "http/json"];

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
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true")
    return { on: false, reason: "OTEL_SDK_DISABLED=true", warnings };
  const listed = listOf(env.OTEL_TRACES_EXPORTER);
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
  } else if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()) {
    exporters = ["otlp"];
  } else {
    return { on: false, reason: "no OTEL_TRACES_EXPORTER or OTLP endpoint set", warnings };
  }
  return { on: true, exporters, protocol: protocolOf(env), warnings };
}

/** `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else http/protobuf. */
function protocolOf(env: NodeJS.ProcessEnv): OtlpProtocol {
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim()
    ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const value = env[variable]?.trim().toLowerCase();
  if (!value) return "http/protobuf";
  if (!PROTOCOLS.includes(value))
    throw new TracingConfigError(
      `${variable}=${JSON.stringify(env[variable])}: Conclave exports over OTLP/HTTP only: use http/protobuf or http/json`,
    );
  return value as OtlpProtocol;
}

/** A comma-separated variable's values, trimmed and lower-cased, blanks left out. */
function listOf(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((part) => part.trim().toLowerCase())
    .filter(Boolean);
}
