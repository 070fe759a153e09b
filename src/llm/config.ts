import { z } from "zod";
import { describeIssues } from "../contracts/issues.ts";
import { ConclaveError } from "../errors.ts";

/**
 * How to reach an OpenAI-compatible chat completions endpoint (OpenAI, Ollama, vLLM, llama.cpp…).
 * Read from the environment by {@link llmConfigFromEnv}.
 */
export interface LlmConfig {
  /**
   * Base URL of the API, ending where `/chat/completions` is appended, e.g. `http://127.0.0.1:11434/v1`.
   * Env `CONCLAVE_LLM_BASE_URL`. No default: when unset or empty, no LLM is used (the offline model runs).
   */
  baseURL: string;
  /**
   * Bearer token sent to the server. Env `CONCLAVE_LLM_API_KEY`.
   * Default `"not-needed"`: local servers (Ollama, vLLM, llama.cpp) accept any value.
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

export const LLM_CONFIG_DEFAULTS = { apiKey: "not-needed", timeoutMs: 30_000, maxRetries: 2 } as const;

/** The LLM settings in the environment are unusable; the message names the variable. */
export class LlmConfigError extends ConclaveError<"config"> {
  constructor(message: string) {
    super("config", message);
  }
}

const baseUrlSchema = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });
const timeoutSchema = z.coerce.number().int("must be a whole number").positive("must be > 0");
const retriesSchema = z.coerce.number().int("must be a whole number").min(0, "must be >= 0").max(10, "must be <= 10");

/** Reads the LLM settings; `null` when `CONCLAVE_LLM_BASE_URL` is unset or empty (offline model). */
export function llmConfigFromEnv(env: NodeJS.ProcessEnv = process.env): LlmConfig | null {
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  const baseURL = read("CONCLAVE_LLM_BASE_URL");
  if (baseURL === undefined) return null;
  const model = read("CONCLAVE_LLM_MODEL");
  if (model === undefined) {
    throw new LlmConfigError("CONCLAVE_LLM_MODEL is required when CONCLAVE_LLM_BASE_URL is set");
  }
  return {
    baseURL: parseVar("CONCLAVE_LLM_BASE_URL", baseURL, baseUrlSchema),
    apiKey: read("CONCLAVE_LLM_API_KEY") ?? LLM_CONFIG_DEFAULTS.apiKey,
    model,
    timeoutMs:
      parseVar("CONCLAVE_LLM_TIMEOUT_MS", read("CONCLAVE_LLM_TIMEOUT_MS"), timeoutSchema.optional()) ??
      LLM_CONFIG_DEFAULTS.timeoutMs,
    maxRetries:
      parseVar("CONCLAVE_LLM_MAX_RETRIES", read("CONCLAVE_LLM_MAX_RETRIES"), retriesSchema.optional()) ??
      LLM_CONFIG_DEFAULTS.maxRetries,
  };
}

function parseVar<S extends z.ZodType>(name: string, value: string | undefined, schema: S): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problem = describeIssues(result.error, { root: "", join: "; " });
  throw new LlmConfigError(`${name}=${JSON.stringify(value)} is invalid: ${problem}`);
}
