/**
 * What one configuration variable is (its type as a zod schema over the
 * variable's text, its default, its documentation, how it is masked), the
 * error a bad value raises, and the value schemas the variables share.
 * The variables themselves are listed in schema.ts.
 */
import { z } from "zod";
import { ConclaveError } from "../errors.ts";

/** A configuration variable whose value cannot work; the one-line message names the variable. */
export class ConfigError extends ConclaveError<"config"> {
  constructor(message: string) {
    super("config", message);
  }
}

/**
 * How a value is shown by `conclave config` and quoted in errors:
 * `secret` never (API keys, passwords, headers carrying tokens), `url` with the
 * password of its user info (and secret-looking query parameters) hidden.
 * File paths are shown: what a file holds is never read to be shown.
 */
export type MaskKind = "secret" | "url";

/** The groups `conclave config` lists the variables under. */
export type ConfigGroup = "environment" | "nats" | "llm" | "embeddings" | "runner" | "storage" | "tracing" | "process";

/** One variable: see schema.ts. */
export interface ConfigVariable<S extends z.ZodType = z.ZodType> {
  /** The variable's type: parses its text (trimmed unless `keepSpaces`, never empty) into its value. */
  readonly schema: S;
  /** Read, in order, when the variable itself is unset or empty: the standard names (OPENAI_API_KEY, NATS_URL…). */
  readonly fallbacks?: readonly string[];
  /** The value when unset (and no fallback is set). */
  readonly default?: z.output<S>;
  /** The default when it is not a constant (it depends on the machine or on another variable), for people. */
  readonly defaultText?: string;
  /** What it does, one or two sentences. */
  readonly doc: string;
  readonly group: ConfigGroup;
  readonly mask?: MaskKind;
  /** Also read as `CONCLAVE_NATS_<ROLE>_<NAME>` (e.g. CONCLAVE_NATS_RUNNER_USER), which wins for that role. */
  readonly perRole?: true;
  /** Not trimmed: a password may start or end with spaces. */
  readonly keepSpaces?: true;
  /** Read by a library (the OpenTelemetry SDK) or by code outside this module rather than through it; listed for `conclave config`. */
  readonly readElsewhere?: string;
}

/** Defines one variable of the table, keeping its schema's and default's types. */
export const variable = <S extends z.ZodType, const D extends Omit<ConfigVariable<S>, "schema">>(
  definition: D & { schema: S },
): D & { schema: S } => definition;

/** A whole number from `min` (and up to `max`), from its decimal text. */
export const wholeNumber = (min: number, max = Number.MAX_SAFE_INTEGER, unit = "") => {
  const problem = `must be a whole number from ${min}${max === Number.MAX_SAFE_INTEGER ? "" : ` to ${max}`}${unit}`;
  return z
    .string()
    .regex(/^[+-]?\d+$/, problem)
    .transform(Number)
    .pipe(z.number().min(min, problem).max(max, problem));
};

/** One of `values`, in any case. */
export const oneOf = <const V extends readonly [string, ...string[]]>(values: V, problem?: string) =>
  z
    .string()
    .transform((text) => text.toLowerCase())
    .pipe(z.enum(values, { error: problem ?? `must be one of ${values.join(", ")} (any case)` }));

/** An http(s) URL. */
export const httpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });

/** A URL of one of the given schemes. */
export const urlOf = (...schemes: string[]) =>
  z.url({
    protocol: new RegExp(`^(${schemes.join("|")})$`),
    error: `must be a ${schemes.map((scheme) => `${scheme}://`).join(" or ")} URL`,
  });

/** A comma-separated list, each entry trimmed, blanks left out. */
export const commaList = z.string().transform((text) =>
  text
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean),
);

/** On with 1, true, yes or on (any case), off with 0, false, no or off. */
export const flag = z
  .string()
  .transform((text) => text.toLowerCase())
  .pipe(
    z.enum(["1", "true", "yes", "on", "0", "false", "no", "off"], {
      error: "must be 1, true, yes, on, 0, false, no or off",
    }),
  )
  .transform((text) => ["1", "true", "yes", "on"].includes(text));

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `30d`, `12h`, `90m`, `3600s` (or `0`) in ms; null when it is none of those. */
export function parseDuration(text: string): number | null {
  const match = /^\s*(\d+)\s*([smhd]?)\s*$/.exec(text);
  if (!match) return null;
  const count = Number(match[1]);
  if (count === 0) return 0;
  return match[2] ? count * UNIT_MS[match[2]]! : null;
}

/**
 * The shortest maximum age of stored data accepted (1 hour), so that no limit
 * can drop the events or status of a turn still running: a turn waits at most
 * its TTL (10 min by default) and runs within its deadlines, well under this.
 */
export const MIN_RETENTION_MS = 3_600_000;

/** What a maximum age below {@link MIN_RETENTION_MS} is told, wherever it is given. */
export const MAX_AGE_PROBLEM = "a maximum age is 0 (for ever) or at least 1 hour";

/**
 * A retention's maximum age (every CONCLAVE_RETAIN_* duration): `30d`, `12h`,
 * `90m`, `3600s` in ms, 0 (for ever) or at least {@link MIN_RETENTION_MS}. The
 * runner reads these variables through this schema (eventlog/retention.ts),
 * so `conclave config` refuses exactly what the runner refuses, in its words.
 */
export const duration = z.string().transform((text, context) => {
  const ms = parseDuration(text);
  if (ms === null) {
    context.addIssue({ code: "custom", message: "expected a duration such as 30d, 12h or 0" });
    return z.NEVER;
  }
  if (ms !== 0 && ms < MIN_RETENTION_MS) {
    context.addIssue({ code: "custom", message: MAX_AGE_PROBLEM });
    return z.NEVER;
  }
  return ms;
});

/** Any text without control characters. */
export const text = z.string().regex(/^[^\p{Cc}]*$/u, "must not contain control characters");
