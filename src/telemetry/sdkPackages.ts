/**
 * The OpenTelemetry SDK packages tracing runs on: optional peers, imported
 * only when tracing is on. One missing gives one error naming each missing
 * package, and how to install them.
 */
import { importOptional, MissingDependencyError } from "../optionalPackages.ts";
import type { OtlpProtocol } from "./config.ts";

/** What every exporter needs. */
export const TRACING_PACKAGES = [
  "@opentelemetry/sdk-trace-base",
  "@opentelemetry/resources",
  "@opentelemetry/context-async-hooks",
  "@opentelemetry/core",
] as const;

/** The OTLP/HTTP exporter of each protocol. */
export const EXPORTER_PACKAGE: Record<OtlpProtocol, string> = {
  "http/protobuf": "@opentelemetry/exporter-trace-otlp-proto",
  "http/json": "@opentelemetry/exporter-trace-otlp-http",
};

const FEATURE = "Tracing (asked for by the OTEL_* variables)";

/** The value of a settled import, or its failure thrown. */
function settledValue<T>(result: PromiseSettledResult<T>): T {
  if (result.status === "rejected") throw result.reason;
  return result.value;
}

/** The SDK's modules, as `loadTracingSdk` imported them. */
export interface TracingSdk {
  sdk: typeof import("@opentelemetry/sdk-trace-base");
  resources: typeof import("@opentelemetry/resources");
  hooks: typeof import("@opentelemetry/context-async-hooks");
  core: typeof import("@opentelemetry/core");
  /** The OTLP/HTTP exporter's module; undefined when only the console exporter is asked for. */
  exporter:
    | typeof import("@opentelemetry/exporter-trace-otlp-http")
    | typeof import("@opentelemetry/exporter-trace-otlp-proto")
    | undefined;
}

/**
 * Imports the SDK, and the OTLP exporter of `protocol` (none for null: the
 * console exporter only). Throws a MissingDependencyError naming every
 * missing package.
 */
export async function loadTracingSdk(protocol: OtlpProtocol | null): Promise<TracingSdk> {
  const one = <T>(name: string, load: () => Promise<T>) => importOptional(FEATURE, [name], load);
  const settled = await Promise.allSettled([
    one("@opentelemetry/sdk-trace-base", () => import("@opentelemetry/sdk-trace-base")),
    one("@opentelemetry/resources", () => import("@opentelemetry/resources")),
    one("@opentelemetry/context-async-hooks", () => import("@opentelemetry/context-async-hooks")),
    one("@opentelemetry/core", () => import("@opentelemetry/core")),
    protocol === null
      ? Promise.resolve(undefined)
      : one(EXPORTER_PACKAGE[protocol], () =>
          protocol === "http/json"
            ? import("@opentelemetry/exporter-trace-otlp-http")
            : import("@opentelemetry/exporter-trace-otlp-proto"),
        ),
  ]);
  const missing = settled.flatMap((result) =>
    result.status === "rejected" && result.reason instanceof MissingDependencyError ? result.reason.packages : [],
  );
  if (missing.length > 0) throw new MissingDependencyError(FEATURE, missing);
  const [sdk, resources, hooks, core, exporter] = settled;
  return {
    sdk: settledValue(sdk),
    resources: settledValue(resources),
    hooks: settledValue(hooks),
    core: settledValue(core),
    exporter: settledValue(exporter),
  };
}
