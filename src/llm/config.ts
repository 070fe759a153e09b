import { readSetting, setting } from "../config/load.ts";
import { maskUrl } from "../config/mask.ts";
import { CONFIG_SCHEMA } from "../config/schema.ts";
import { ConclaveError } from "../errors.ts";

/**
 * How to reach an OpenAI-compatible chat completions endpoint (OpenAI, Ollama, vLLM, llama.cpp…).
 * Read from the environment by {@link llmConfigFromEnv}.
 */
export interface LlmConfig {
  /**
   * Base URL of the API, ending where `/chat/completions` is appended, e.g. `http://127.0.0.1:11434/v1`.
   * Env `CONCLAVE_LLM_BASE_URL`, else `OPENAI_BASE_URL`. No default: when unset or empty, no LLM is used (the
   * offline model runs).
   */
  baseURL: string;
  /**
   * Bearer token sent to the server. Env `CONCLAVE_LLM_API_KEY`, else `OPENAI_API_KEY`. No default: required
   * for a server elsewhere; a server on loopback without one gets a placeholder (local servers take any).
   */
  apiKey: string;
  /** Model id sent with every request. Env `CONCLAVE_LLM_MODEL`. Required when a base URL is set. */
  model: string;
  /**
   * Default deadline of one call in milliseconds, retries and the whole streamed body included;
   * a request's own `timeoutMs` overrides it. Env `CONCLAVE_LLM_TIMEOUT_MS`. Default 30000.
   */
  timeoutMs: number;
  /**
   * How many times the openai client retries a request that failed with 408, 409, 429, 5xx or a
   * connection error, with backoff (honouring `retry-after-ms` / `retry-after`).
   * Env `CONCLAVE_LLM_MAX_RETRIES`. Default 2.
   */
  maxRetries: number;
}

/** The defaults of {@link LlmConfig} (src/config/schema.ts). No API key: see {@link llmConfigFromEnv}. */
export const LLM_CONFIG_DEFAULTS = {
  timeoutMs: CONFIG_SCHEMA.CONCLAVE_LLM_TIMEOUT_MS.default,
  maxRetries: CONFIG_SCHEMA.CONCLAVE_LLM_MAX_RETRIES.default,
} as const;

/**
 * The API key sent to a server on this machine when none is set: the openai client refuses to be
 * made without one, and local servers (Ollama, vLLM, llama.cpp) take any. Never sent elsewhere.
 */
export const LOCAL_SERVER_API_KEY = "no-key-local-server";

/** The LLM settings in the environment are unusable; the message names the variable. */
export class LlmConfigError extends ConclaveError<"config"> {
  constructor(message: string) {
    super("config", message);
  }
}

const LOOPBACK_HOST = /^(localhost|.+\.localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** True when the URL's host is this machine (a name or address of loopback). */
export const isLoopbackUrl = (url: string): boolean => LOOPBACK_HOST.test(new URL(url).hostname);

/**
 * Reads the LLM settings; `null` when no base URL is set (offline model). Each setting is its
 * `CONCLAVE_LLM_*` variable, else for the base URL and key the standard `OPENAI_BASE_URL` and
 * `OPENAI_API_KEY`, else its default. With no key anywhere, a server on loopback gets a
 * placeholder ({@link LOCAL_SERVER_API_KEY}); any other server is a LlmConfigError naming the
 * variables, as is a bad value.
 */
export function llmConfigFromEnv(env: NodeJS.ProcessEnv = process.env): LlmConfig | null {
  const error = (message: string) => new LlmConfigError(message);
  const base = readSetting(env, "CONCLAVE_LLM_BASE_URL", { error });
  if (base.value === undefined) return null;
  const from = base.origin.kind === "fallback" ? base.origin.variable : "CONCLAVE_LLM_BASE_URL";
  const model = setting(env, "CONCLAVE_LLM_MODEL", { error });
  if (model === undefined) throw new LlmConfigError(`CONCLAVE_LLM_MODEL is required when ${from} is set`);
  const apiKey = setting(env, "CONCLAVE_LLM_API_KEY", { error }) ?? localKeyFor(base.value, from);
  return {
    baseURL: base.value,
    apiKey,
    model,
    timeoutMs: setting(env, "CONCLAVE_LLM_TIMEOUT_MS", { error }),
    maxRetries: setting(env, "CONCLAVE_LLM_MAX_RETRIES", { error }),
  };
}

/** The placeholder key for a server on loopback; for any other, the error saying which key to set. */
function localKeyFor(baseURL: string, from: string): string {
  if (isLoopbackUrl(baseURL)) return LOCAL_SERVER_API_KEY;
  throw new LlmConfigError(
    `${from}=${JSON.stringify(maskUrl(baseURL))} is not on this machine and no API key is set: set CONCLAVE_LLM_API_KEY or OPENAI_API_KEY (any value if the server takes none)`,
  );
}
