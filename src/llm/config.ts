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
   * Env `CONCLAVE_LLM_BASE_URL`, else `OPENAI_BASE_URL`. Default `https://api.openai.com/v1` (OpenAI) when an
   * API key is set; with neither, no LLM is used (the offline model runs).
   */
  baseURL: string;
  /**
   * Bearer token sent to the server. Env `CONCLAVE_LLM_API_KEY`, else `OPENAI_API_KEY`. No default: required
   * for a server elsewhere; a server on loopback without one gets a placeholder (local servers take any).
   */
  apiKey: string;
  /**
   * Model id sent with every request. Env `CONCLAVE_LLM_MODEL`, else `OPENAI_MODEL`. Default
   * `gpt-4.1-mini` when an API key is set; required for a keyless (local) server.
   */
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

/** The server an API key alone selects: OpenAI's. */
export const DEFAULT_LLM_BASE_URL = "https://api.openai.com/v1";

/** The model an API key alone selects: a current, cheap OpenAI chat model with structured outputs and tools. */
export const DEFAULT_LLM_MODEL = "gpt-4.1-mini";

/** The value of `CONCLAVE_LLM_MODEL` (or `OPENAI_MODEL`) that keeps the offline model whatever else is set. */
export const OFFLINE_LLM_MODEL = "offline";

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
 * Reads the LLM settings; `null` for the offline model: when neither a base URL nor an API key is
 * set, or the model is `offline`. Each setting is its `CONCLAVE_LLM_*` variable, else
 * the standard `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`, else its default. An API key
 * alone is OpenAI (`https://api.openai.com/v1`) with `gpt-4.1-mini`; a base URL without
 * a key must be on loopback (it gets the placeholder {@link LOCAL_SERVER_API_KEY}) and name its model.
 * Anything else, and a bad value, is a LlmConfigError naming the variables.
 */
export function llmConfigFromEnv(env: NodeJS.ProcessEnv = process.env): LlmConfig | null {
  const error = (message: string) => new LlmConfigError(message);
  const base = readSetting(env, "CONCLAVE_LLM_BASE_URL", { error });
  const key = readSetting(env, "CONCLAVE_LLM_API_KEY", { error });
  const model = readSetting(env, "CONCLAVE_LLM_MODEL", { error });
  if (model.value === OFFLINE_LLM_MODEL) return null;
  if (base.value === undefined && key.value === undefined) return null;
  const from = base.origin.kind === "fallback" ? base.origin.variable : "CONCLAVE_LLM_BASE_URL";
  const baseURL = base.value ?? DEFAULT_LLM_BASE_URL;
  const apiKey = key.value ?? localKeyFor(baseURL, from);
  if (model.value === undefined && key.value === undefined)
    throw new LlmConfigError(
      `CONCLAVE_LLM_MODEL (or OPENAI_MODEL) is required when ${from} is set without an API key: set the model the server has`,
    );
  return {
    baseURL,
    apiKey,
    model: model.value ?? DEFAULT_LLM_MODEL,
    timeoutMs: setting(env, "CONCLAVE_LLM_TIMEOUT_MS", { error }),
    maxRetries: setting(env, "CONCLAVE_LLM_MAX_RETRIES", { error }),
  };
}

/** The model a process runs, in one line: `gpt-4.1-mini at https://api.openai.com/v1`, or the offline model. */
export function describeLlm(config: LlmConfig | null): string {
  if (!config) return "the offline model (deterministic; set OPENAI_API_KEY for an LLM)";
  return `${config.model} at ${maskUrl(config.baseURL)}`;
}

/** The placeholder key for a server on loopback; for any other, the error saying which key to set. */
function localKeyFor(baseURL: string, from: string): string {
  if (isLoopbackUrl(baseURL)) return LOCAL_SERVER_API_KEY;
  throw new LlmConfigError(
    `${from}=${JSON.stringify(maskUrl(baseURL))} is not on this machine and no API key is set: set CONCLAVE_LLM_API_KEY or OPENAI_API_KEY (any value if the server takes none)`,
  );
}
