/**
 * Reading configuration from an environment object (`process.env` unless a
 * caller, a test above all, passes its own): one variable at a time
 * ({@link setting}, {@link readSetting}), so a module fails only on the
 * variables it uses, or all of them ({@link loadConfig}, {@link describeConfig}).
 */

import { describeIssues } from "../contracts/issues.ts";
import { singleLine } from "../errors.ts";
import { maskValue } from "./mask.ts";
import { CONFIG_ROLES, CONFIG_SCHEMA, type ConfigName, type ConfigValue } from "./schema.ts";
import { ConfigError, type ConfigVariable } from "./variable.ts";

/** An environment: `process.env`, or any object of strings. */
export type Env = NodeJS.ProcessEnv | Readonly<Record<string, string | undefined>>;

/** Where a value came from. */
export type ConfigOrigin =
  /** The variable itself, or its per-role form (`variable` says which). */
  | { kind: "env"; variable: string }
  /** A standard name read after the CONCLAVE_* one (OPENAI_API_KEY, NATS_URL…). */
  | { kind: "fallback"; variable: string }
  | { kind: "default" }
  | { kind: "unset" };

/** How one variable is read. */
export interface ReadOptions {
  /** Read `CONCLAVE_NATS_<ROLE>_<NAME>` first (variables marked perRole). */
  role?: (typeof CONFIG_ROLES)[number];
  /** Read the standard fallbacks too. Default true. */
  fallbacks?: boolean;
  /** The error raised for a bad value (a module's own ConclaveError<"config"> class). Default ConfigError. */
  error?: (message: string) => Error;
}

/** A variable as read: its value (undefined when unset with no default) and where it came from. */
export interface ConfigReading<T> {
  value: T | undefined;
  origin: ConfigOrigin;
}

type Definition = ConfigVariable;
const definitionOf = (name: ConfigName): Definition => CONFIG_SCHEMA[name] as Definition;

/** The names read for a variable, in order of precedence, with how each counts. */
export function namesOf(name: ConfigName, options: ReadOptions = {}): { variable: string; kind: "env" | "fallback" }[] {
  const definition = definitionOf(name);
  const names: { variable: string; kind: "env" | "fallback" }[] = [];
  if (options.role && definition.perRole)
    names.push({
      variable: name.replace(/^CONCLAVE_NATS_/, `CONCLAVE_NATS_${options.role.toUpperCase()}_`),
      kind: "env",
    });
  names.push({ variable: name, kind: "env" });
  if (options.fallbacks !== false)
    for (const fallback of definition.fallbacks ?? []) names.push({ variable: fallback, kind: "fallback" });
  return names;
}

/** A variable's text as the schema takes it: trimmed (unless keepSpaces); empty counts as unset. */
function textOf(env: Env, variable: string, definition: Definition): string | undefined {
  const raw = env[variable];
  if (raw === undefined || raw.trim() === "") return undefined;
  return definition.keepSpaces ? raw : raw.trim();
}

/** The one-line message of a bad value: the variable, its value (masked), and what is wrong. */
export function invalidMessage(variable: string, value: string, definition: Definition, problem: string): string {
  const shown = singleLine(JSON.stringify(maskValue(value, definition.mask)), 120);
  return `${variable}=${shown} is invalid: ${singleLine(problem, 300)}`;
}

/**
 * One variable, read and checked: the first of its names that is set (its
 * per-role form, itself, its fallbacks), parsed by its schema; else its
 * default. A bad value throws a "config" error naming the variable read.
 */
export function readSetting<N extends ConfigName>(
  env: Env,
  name: N,
  options: ReadOptions = {},
): ConfigReading<ConfigValue<N>> {
  const definition = definitionOf(name);
  for (const { variable, kind } of namesOf(name, options)) {
    const text = textOf(env, variable, definition);
    if (text === undefined) continue;
    const parsed = definition.schema.safeParse(text);
    if (!parsed.success) {
      const problem = describeIssues(parsed.error, { root: "", join: "; " });
      const message = invalidMessage(variable, text, definition, problem);
      throw options.error ? options.error(message) : new ConfigError(message);
    }
    return { value: parsed.data as ConfigValue<N>, origin: { kind, variable } };
  }
  if (definition.default !== undefined)
    return { value: definition.default as ConfigValue<N>, origin: { kind: "default" } };
  return { value: undefined, origin: { kind: "unset" } };
}

/** The value of a variable with a default is never undefined. */
export type SettingOf<N extends ConfigName> = (typeof CONFIG_SCHEMA)[N] extends { default: unknown }
  ? ConfigValue<N>
  : ConfigValue<N> | undefined;

/** One variable's value (see {@link readSetting}): its default when unset, undefined when it has none. */
export function setting<N extends ConfigName>(env: Env, name: N, options: ReadOptions = {}): SettingOf<N> {
  return readSetting(env, name, options).value as SettingOf<N>;
}

/**
 * A variable's value, or its default when the value set is bad: for the few
 * places that must never throw (a logger's level, a dead letter's policy); the
 * bad value still shows in `conclave config`.
 */
export function lenientSetting<N extends ConfigName>(env: Env, name: N, options: ReadOptions = {}): SettingOf<N> {
  try {
    return setting(env, name, options);
  } catch {
    return definitionOf(name).default as SettingOf<N>;
  }
}

/** Whether any of a variable's names (per-role form, itself, fallbacks) is set to something not blank. */
export function isSet(env: Env, name: ConfigName, options: ReadOptions = {}): boolean {
  const definition = definitionOf(name);
  return namesOf(name, options).some(({ variable }) => textOf(env, variable, definition) !== undefined);
}

/** Every variable's value, checked: the first bad one throws its "config" error. */
export function loadConfig(env: Env = process.env): { [N in ConfigName]: SettingOf<N> } {
  const values: Partial<Record<ConfigName, unknown>> = {};
  for (const name of Object.keys(CONFIG_SCHEMA) as ConfigName[]) values[name] = setting(env, name);
  return values as { [N in ConfigName]: SettingOf<N> };
}

/** One row of the effective configuration, as `conclave config` prints it. */
export interface ConfigRow {
  /** The variable (a per-role one, e.g. CONCLAVE_NATS_RUNNER_USER, only when set). */
  name: string;
  group: string;
  /** The value as text, masked; undefined when unset with no default. */
  value: string | undefined;
  /** Where it came from: the variable read, a fallback's name, `default`, or `unset`. */
  origin: ConfigOrigin;
  /** The default, for people. */
  default?: string;
  /** Why the value set is refused (the one-line error). */
  problem?: string;
  /** Standard names read after it. */
  fallbacks?: readonly string[];
  /** Who reads it, when not a module through this table (the OpenTelemetry SDK…). */
  readElsewhere?: string;
  doc: string;
}

/** A value as text for people. */
function shownValue(value: unknown): string {
  if (Array.isArray(value)) return value.join(",");
  return String(value);
}

/**
 * The effective configuration: a row per variable (and per per-role NATS
 * variable that is set), each with its masked value and origin. A bad value
 * does not throw: its row carries the problem.
 */
export function describeConfig(env: Env = process.env): ConfigRow[] {
  const rows: ConfigRow[] = [];
  for (const name of Object.keys(CONFIG_SCHEMA) as ConfigName[]) {
    const definition = definitionOf(name);
    const roles = definition.perRole
      ? CONFIG_ROLES.filter((role) => textOf(env, namesOf(name, { role })[0]!.variable, definition) !== undefined)
      : [];
    for (const role of [undefined, ...roles]) {
      const shownName = role ? namesOf(name, { role })[0]!.variable : name;
      // A per-role row shows only its own variable; the general row shows the general chain.
      const options: ReadOptions = role ? { role, fallbacks: false } : {};
      const row: ConfigRow = {
        name: shownName,
        group: definition.group,
        value: undefined,
        origin: { kind: "unset" },
        doc: definition.doc,
        ...(definition.default !== undefined
          ? { default: shownValue(definition.default) }
          : definition.defaultText
            ? { default: definition.defaultText }
            : {}),
        ...(definition.fallbacks && !role ? { fallbacks: definition.fallbacks } : {}),
        ...(definition.readElsewhere ? { readElsewhere: definition.readElsewhere } : {}),
      };
      try {
        const reading = readSetting(env, name, options);
        row.origin = reading.origin;
        if (reading.value !== undefined) row.value = maskValue(shownValue(reading.value), definition.mask);
      } catch (error) {
        row.problem = (error as Error).message;
        const first = namesOf(name, options).find(({ variable }) => textOf(env, variable, definition) !== undefined);
        if (first) {
          row.origin = { kind: first.kind, variable: first.variable };
          row.value = maskValue(textOf(env, first.variable, definition)!, definition.mask);
        }
      }
      rows.push(row);
    }
  }
  return rows;
}
