/**
 * The OpenTelemetry variables (docs/tracing.md): read by the tracing set-up
 * (src/telemetry/) and by the SDK itself. Spread into CONFIG_SCHEMA by schema.ts.
 */
import { z } from "zod";
import { type ConfigVariable, commaList, oneOf, text, variable } from "../variable.ts";

/** An OTLP protocol Conclave exports with: over HTTP only, in any case. */
const otlpProtocol = z
  .string()
  .transform((value) => value.toLowerCase())
  .pipe(
    z.enum(["http/protobuf", "http/json"], {
      error: "Conclave exports over OTLP/HTTP only: use http/protobuf or http/json",
    }),
  );

/** The tracing variables, in the order `conclave config` lists them. */
export const TRACING_VARIABLES = {
  OTEL_SDK_DISABLED: variable({
    group: "tracing",
    schema: z.string().transform((value) => value.toLowerCase() === "true"),
    default: false,
    doc: "true turns tracing off, whatever else is set.",
  }),
  OTEL_TRACES_EXPORTER: variable({
    group: "tracing",
    schema: commaList.transform((names) => names.map((name) => name.toLowerCase())),
    defaultText: "otlp when an OTLP endpoint is set, else none",
    doc: "otlp and/or console (others are left out with a warning), or none.",
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: variable({
    group: "tracing",
    schema: text,
    mask: "url",
    doc: "OTLP/HTTP collector; setting it turns tracing on. Read by the SDK.",
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: variable({
    group: "tracing",
    schema: text,
    mask: "url",
    doc: "OTLP/HTTP traces endpoint, over the general one. Read by the SDK.",
  }),
  OTEL_EXPORTER_OTLP_PROTOCOL: variable({
    group: "tracing",
    schema: otlpProtocol,
    default: "http/protobuf",
    doc: "OTLP body encoding: http/protobuf or http/json (grpc is not supported).",
  }),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: variable({
    group: "tracing",
    schema: otlpProtocol,
    defaultText: "OTEL_EXPORTER_OTLP_PROTOCOL",
    doc: "The traces' OTLP encoding, over the general one.",
  }),
  OTEL_EXPORTER_OTLP_HEADERS: variable({
    group: "tracing",
    schema: z.string(),
    mask: "secret",
    readElsewhere: "the OpenTelemetry SDK",
    doc: "Headers sent to the collector (often a token). Read by the SDK.",
  }),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: variable({
    group: "tracing",
    schema: z.string(),
    mask: "secret",
    readElsewhere: "the OpenTelemetry SDK",
    doc: "Headers sent with traces, over the general ones. Read by the SDK.",
  }),
  OTEL_SERVICE_NAME: variable({
    group: "tracing",
    schema: text,
    defaultText: "conclave-runner, conclave-worker or conclave-client",
    readElsewhere: "the OpenTelemetry SDK",
    doc: "The process's service.name. Read by the SDK.",
  }),
  OTEL_RESOURCE_ATTRIBUTES: variable({
    group: "tracing",
    schema: text,
    readElsewhere: "the OpenTelemetry SDK",
    doc: "key=value,… added to every span's resource. Read by the SDK.",
  }),
  OTEL_LOG_LEVEL: variable({
    group: "tracing",
    schema: oneOf(["none", "error", "warn", "info", "debug", "verbose", "all"]),
    default: "error",
    doc: "What the SDK itself reports on stderr (a failed export is an error).",
  }),
} as const satisfies Record<string, ConfigVariable>;
