/**
 * The features that need an optional peer package (see optionalPackages.ts), each with its
 * packages, and whether this installation has them: what `conclave doctor` lists, and what a
 * feature that falls back (the viewer's diagrams, the gateway's AG-UI, exact token counts) says
 * when it does.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { messageOf } from "./errors.ts";

/** One optional feature and the peer packages it needs. */
export interface OptionalFeature {
  /** A stable id, for `--json` readers. */
  readonly id: string;
  /** What the feature is, for people. */
  readonly feature: string;
  /** What happens without it. */
  readonly without: string;
  /** The packages it needs, as `npm install` takes them. */
  readonly packages: readonly string[];
}

/** Every optional feature, in the order `conclave doctor` lists them. */
export const OPTIONAL_FEATURES: readonly OptionalFeature[] = [
  {
    id: "llm",
    feature: "LLM mode (an OpenAI-compatible model or embedder)",
    without: "a process configured for a model refuses to start",
    packages: ["openai"],
  },
  {
    id: "tokenizer",
    feature: "exact token counts for context budgets (OpenAI encodings)",
    without: "tokens are estimated at four bytes each",
    packages: ["gpt-tokenizer"],
  },
  {
    id: "mcp",
    feature: "MCP: conclave serve's MCP endpoint, worker --mcp tools",
    without: "conclave serve and worker --mcp refuse to start",
    packages: ["@modelcontextprotocol/sdk"],
  },
  {
    id: "agui",
    feature: "AG-UI: conclave serve's /ag-ui endpoint",
    without: "/ag-ui answers 501",
    packages: ["@ag-ui/core", "@ag-ui/encoder"],
  },
  {
    id: "a2a",
    feature: "A2A: conclave serve's A2A endpoint, remote A2A agents",
    without: "the gateway serves no A2A card; remote A2A agents refuse to start",
    packages: ["@a2a-js/sdk"],
  },
  {
    id: "chat",
    feature: "the terminal UI (conclave chat)",
    without: "conclave chat refuses to start",
    packages: ["ink", "react"],
  },
  {
    id: "viewer-diagrams",
    feature: "the viewer's statechart diagrams (conclave viewer)",
    without: "the viewer shows each machine as text cards",
    packages: ["elkjs"],
  },
  {
    id: "inspect",
    feature: "the Stately inspector (conclave inspect)",
    without: "conclave inspect refuses to start",
    packages: ["@statelyai/inspect"],
  },
  {
    id: "tracing",
    feature: "tracing over OTLP http/protobuf, the default (OTEL_* variables)",
    without: "a process asked to trace refuses to start",
    packages: [
      "@opentelemetry/sdk-trace-base",
      "@opentelemetry/resources",
      "@opentelemetry/context-async-hooks",
      "@opentelemetry/core",
      "@opentelemetry/exporter-trace-otlp-proto",
    ],
  },
  {
    id: "tracing-json",
    feature: "tracing over OTLP http/json (OTEL_EXPORTER_OTLP_PROTOCOL=http/json)",
    without: "a process asked to trace over http/json refuses to start",
    packages: [
      "@opentelemetry/sdk-trace-base",
      "@opentelemetry/resources",
      "@opentelemetry/context-async-hooks",
      "@opentelemetry/core",
      "@opentelemetry/exporter-trace-otlp-http",
    ],
  },
  {
    id: "postgres",
    feature: "PostgreSQL stores (memory graph, blackboard)",
    without: "CONCLAVE_MEMORY_BACKEND=postgres and a postgres blackboard refuse to start",
    packages: ["pg"],
  },
  {
    id: "redis",
    feature: "the Redis blackboard store",
    without: "a redis blackboard refuses to start",
    packages: ["redis"],
  },
];

/** How to tell whether a package loads, when not by importing its name: a module of it, imported or required as Conclave does. */
const PROBE: Readonly<Record<string, { import: string } | { require: string }>> = {
  // It has no root module: the types are what every part of Conclave's MCP imports.
  "@modelcontextprotocol/sdk": { import: "@modelcontextprotocol/sdk/types.js" },
  // What the context arena loads (the package's root is not what it needs).
  "gpt-tokenizer": { require: "gpt-tokenizer/encoding/cl100k_base" },
  // The browser bundle the viewer serves.
  elkjs: { require: "elkjs/lib/elk.bundled.js" },
};

/** One package as this installation has it. */
export interface PackageState {
  name: string;
  /** It resolves from Conclave's own location and loads. */
  available: boolean;
  /** Its version, when its package.json can be read. */
  version?: string;
  /** Why it is not available: not installed, or the one-line load failure. */
  problem?: string;
}

/** One feature as this installation has it. */
export interface FeatureState extends OptionalFeature {
  available: boolean;
  packageStates: PackageState[];
  /** The one command that adds what it lacks; absent when available. */
  install?: string;
}

const require = createRequire(import.meta.url);

/** The package's version, from the package.json Node's lookup finds first (undefined when none is readable). */
function versionOf(name: string): string | undefined {
  for (const dir of require.resolve.paths(name) ?? []) {
    const manifest = join(dir, name, "package.json");
    if (!existsSync(manifest)) continue;
    try {
      return (JSON.parse(readFileSync(manifest, "utf8")) as { version?: string }).version;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

const checked = new Map<string, Promise<PackageState>>();

/** Whether the error is Node not finding `name` itself (not a module it imports). */
function notFound(error: unknown, name: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return false;
  return new RegExp(`Cannot find (?:package|module) '${name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}[/']`).test(
    (error as Error).message,
  );
}

/**
 * Whether `name` loads from where Conclave loads it (imported, or required as the feature does);
 * looked at once per process.
 */
export function checkPackage(name: string): Promise<PackageState> {
  let state = checked.get(name);
  if (!state) {
    state = (async (): Promise<PackageState> => {
      const probe = PROBE[name] ?? { import: name };
      try {
        if ("require" in probe) require(probe.require);
        else await import(probe.import);
      } catch (error) {
        if (notFound(error, name)) return { name, available: false, problem: "not installed" };
        const version = versionOf(name);
        return {
          name,
          available: false,
          ...(version ? { version } : {}),
          problem: `does not load: ${messageOf(error)}`,
        };
      }
      const version = versionOf(name);
      return { name, available: true, ...(version ? { version } : {}) };
    })();
    checked.set(name, state);
  }
  return state;
}

/** `npm install` of the packages, or undefined for none. */
export const installLine = (packages: readonly string[]): string | undefined =>
  packages.length === 0 ? undefined : `npm install ${[...new Set(packages)].join(" ")}`;

/** One feature's state: available when every package it needs is. */
export async function checkFeature(feature: OptionalFeature): Promise<FeatureState> {
  const packageStates = await Promise.all(feature.packages.map(checkPackage));
  const missing = packageStates.filter((state) => !state.available).map((state) => state.name);
  const install = installLine(missing);
  return { ...feature, available: missing.length === 0, packageStates, ...(install ? { install } : {}) };
}

/** The feature of `id` (one of {@link OPTIONAL_FEATURES}). */
export function optionalFeature(id: string): OptionalFeature {
  const feature = OPTIONAL_FEATURES.find((candidate) => candidate.id === id);
  if (!feature) throw new Error(`no optional feature '${id}'`);
  return feature;
}

/** What a feature that falls back says, in one line: which package is missing and how to add it. */
export function fallbackLine(state: FeatureState): string {
  const missing = state.packageStates.filter((one) => !one.available).map((one) => one.name);
  return `${state.feature} is off (${state.without}): it needs ${missing.join(" and ")}: ${state.install}`;
}
