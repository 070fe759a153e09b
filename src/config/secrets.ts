/**
 * Secrets kept out of what Conclave writes. A provider, a proxy or an MCP
 * server may echo the credentials it was sent in its error message; that
 * message then becomes an event, a log line, a span's status or a gateway
 * reply, which many more people can read than the configuration. So every
 * error crossing one of those boundaries passes through {@link scrubSecrets}:
 * the secret settings of the configuration (every `mask: "secret"` variable,
 * the passwords and secret parameters of every `mask: "url"` one, in each of
 * their per-role and fallback names), the secrets given in code
 * ({@link registerSecrets}), `Bearer …`/`Basic …` credentials and
 * `sk-…`-shaped keys are each replaced by {@link REDACTED}.
 */
import { type Env, namesOf } from "./load.ts";
import { SECRET_PARAMETER, userInfoPassword } from "./mask.ts";
import { CONFIG_ROLES, CONFIG_SCHEMA, type ConfigName } from "./schema.ts";
import type { ConfigVariable } from "./variable.ts";

/** What a secret is replaced by. */
export const REDACTED = "[redacted]";

/**
 * Shorter values are not scrubbed: a key or token is longer, and replacing
 * every `test` (a test's key) would garble messages and hide little.
 */
const MIN_SECRET_LENGTH = 8;

/**
 * `Bearer <token>` or `Basic <credentials>`, as an Authorization header writes
 * them: 8 characters or more with a digit, so prose ("a Bearer token") is left alone.
 */
const AUTHORIZATION = /\b(Bearer|Basic)(\s+)(?=[A-Za-z._~+/=-]*\d)[A-Za-z0-9._~+/=-]{8,}/gi;

/** An OpenAI-style key (`sk-…`, `sk-proj-…`, `sk-ant-…`). */
const SK_KEY = /\bsk-[A-Za-z0-9_-]{8,}/g;

/** Header names whose values are credentials. */
const SECRET_HEADER = /auth|token|key|secret|cookie|pass|cred/i;

const registered = new Set<string>();

/**
 * Adds secrets known only to code (an `apiKey` passed as an option, an MCP
 * server's Authorization header) to those scrubbed, for the life of the process.
 */
export function registerSecrets(values: Iterable<string | undefined>): void {
  for (const value of values) for (const part of partsOf(value)) registered.add(part);
}

/**
 * Registers the credentials in a set of HTTP headers or environment variables
 * (an MCP server's `headers` or `env`): values under a credential-looking name,
 * and any `Bearer …`/`Basic …` value.
 */
export function registerSecretEntries(entries: Record<string, string> | undefined): void {
  for (const [name, value] of Object.entries(entries ?? {}))
    if (SECRET_HEADER.test(name) || /^(Bearer|Basic|Token)\s/i.test(value)) registerSecrets([value]);
}

/** The value and the piece of it that is a secret on its own (the credentials after an Authorization scheme). */
function partsOf(value: string | undefined): string[] {
  if (value === undefined) return [];
  const parts = [value, value.trim()];
  const authorization = /^\s*(?:Bearer|Basic|Token|ApiKey|Key)\s+(.+?)\s*$/i.exec(value);
  if (authorization?.[1]) parts.push(authorization[1]);
  return parts.filter((part) => part.length >= MIN_SECRET_LENGTH);
}

/** The env names (per-role forms and fallbacks included) of the secret and URL variables, computed once. */
let secretNames: { variable: string; kind: "secret" | "url" | "headers" }[] | undefined;

function namesToRead(): NonNullable<typeof secretNames> {
  if (secretNames) return secretNames;
  const names = new Map<string, "secret" | "url" | "headers">();
  for (const name of Object.keys(CONFIG_SCHEMA) as ConfigName[]) {
    const definition = CONFIG_SCHEMA[name] as ConfigVariable;
    if (!definition.mask) continue;
    const kind = definition.mask === "url" ? "url" : /_HEADERS$/.test(name) ? "headers" : "secret";
    for (const role of [undefined, ...CONFIG_ROLES])
      for (const { variable } of namesOf(name, role ? { role } : {})) names.set(variable, kind);
  }
  secretNames = [...names].map(([variable, kind]) => ({ variable, kind }));
  return secretNames;
}

/** The secrets in a URL list: user-info passwords and secret-looking query parameters, raw and decoded. */
function urlSecrets(value: string): string[] {
  const found: string[] = [];
  for (const url of value.split(",")) {
    const password = userInfoPassword(url);
    if (password !== undefined) found.push(password, safeDecode(password));
    const query = url.indexOf("?");
    if (query < 0) continue;
    for (const pair of url.slice(query + 1).split(/[&#]/)) {
      const [name = "", parameter = ""] = pair.split("=", 2);
      if (SECRET_PARAMETER.test(name) && parameter) found.push(parameter, safeDecode(parameter));
    }
  }
  return found;
}

/** `name=value,…` (OTEL_EXPORTER_OTLP_HEADERS): each value, raw and decoded, and the whole text. */
function headerSecrets(value: string): string[] {
  const found = [value];
  for (const pair of value.split(",")) {
    const at = pair.indexOf("=");
    if (at < 0) continue;
    const header = pair.slice(at + 1);
    found.push(header, safeDecode(header));
  }
  return found;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Every secret value the configuration in `env` holds, and those registered, longest first. */
export function configuredSecrets(env: Env = process.env): string[] {
  const found = new Set(registered);
  for (const { variable, kind } of namesToRead()) {
    const value = env[variable];
    if (!value) continue;
    const values = kind === "url" ? urlSecrets(value) : kind === "headers" ? headerSecrets(value) : [value];
    for (const secret of values) for (const part of partsOf(secret)) found.add(part);
  }
  return [...found].sort((a, b) => b.length - a.length);
}

/** The forms a secret may take inside a message: as is, percent-encoded, JSON-escaped. */
function formsOf(secret: string): string[] {
  const forms = new Set([secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)]);
  return [...forms];
}

/**
 * `text` with every configured or registered secret, every `Bearer`/`Basic`
 * credential and every `sk-…` key replaced by {@link REDACTED}. Idempotent.
 */
export function scrubSecrets(text: string, env: Env = process.env): string {
  let scrubbed = text;
  for (const secret of configuredSecrets(env))
    for (const form of formsOf(secret)) if (scrubbed.includes(form)) scrubbed = scrubbed.split(form).join(REDACTED);
  return scrubbed.replace(AUTHORIZATION, `$1$2${REDACTED}`).replace(SK_KEY, REDACTED);
}

/** Causes followed by {@link scrubError}: a chain is short, a cycle must not loop. */
const MAX_CAUSES = 5;

/**
 * A copy of an error fit to keep as a cause or to serialise: its name,
 * scrubbed message and stack, string `code`, and scrubbed causes; none of the
 * original's other fields (an HTTP client's error carries the response body
 * and headers). Anything else thrown becomes its scrubbed text.
 */
export function scrubError(error: unknown, depth = 0): unknown {
  if (error === undefined || error === null) return error;
  if (!(error instanceof Error)) return scrubSecrets(String(error));
  const copy = new Error(scrubSecrets(error.message), {
    ...(error.cause !== undefined && depth < MAX_CAUSES ? { cause: scrubError(error.cause, depth + 1) } : {}),
  });
  copy.name = error.name;
  copy.stack = error.stack === undefined ? undefined : scrubSecrets(error.stack);
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" || typeof code === "number") Object.assign(copy, { code });
  return copy;
}
