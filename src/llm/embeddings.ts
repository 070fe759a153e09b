/**
 * Embeddings: text turned into vectors, so memory can rank what it holds by closeness of meaning
 * to a message. Two embedders: a model on the OpenAI-compatible server of the LLM settings
 * (`POST <base URL>/embeddings`, through the official `openai` client), and the deterministic
 * offline one (hashed topics: NOT semantic). Configured by {@link embeddingConfigFromEnv}.
 */
import type OpenAI from "openai";
import type { CreateEmbeddingResponse } from "openai/resources/embeddings";
import { setting } from "../config/load.ts";
import { CONFIG_SCHEMA } from "../config/schema.ts";
import { registerSecrets } from "../config/secrets.ts";
import type { Usage } from "../contracts/usage.ts";
import { deadlineSignal, timedOut, unlessAborted } from "../deadline.ts";
import type { LlmErrorCode } from "../errors.ts";
import { messageOf } from "../errors.ts";
import { OFFLINE_EMBEDDING_DIMS, offlineEmbedding } from "../memory/learn/embedder.ts";
import { withEmbeddingSpans } from "../telemetry/genAiSpans.ts";
import { type LlmConfig, LlmConfigError, llmConfigFromEnv } from "./config.ts";
import { LlmError, type LlmErrorOptions, llmErrorFromOpenAI } from "./errors.ts";
import { loadOpenAI } from "./openaiPackage.ts";

/** Turns texts into vectors, one per text, in the texts' order. */
export interface Embedder {
  /**
   * Which embedder and model made a vector (`openai:text-embedding-3-small`, `offline:64`).
   * Vectors of different ids do not compare: a stored vector is used only with the id it was made by.
   */
  readonly id: string;
  /** The model's name (`offline` for the offline embedder). */
  readonly model: string;
  /**
   * One vector per text, in order; all of one length. An empty list costs no call. Fails with an
   * {@link EmbeddingError} (the openai embedder; after its retries, or at its deadline).
   * `onUsage` is told the tokens a call to a model used, with the model (the offline embedder makes none).
   */
  embed(texts: readonly string[], signal?: AbortSignal, onUsage?: (usage: Usage) => void): Promise<number[][]>;
}

/** Where embeddings come from: the offline embedder, or a model on an OpenAI-compatible server. */
export type EmbeddingConfig = { kind: "offline"; dims: number } | OpenAIEmbeddingConfig;

/** A model on an OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, vLLM, llama.cpp…). */
export interface OpenAIEmbeddingConfig {
  kind: "openai";
  /** Base URL of the API, where `/embeddings` is appended: the LLM's (`CONCLAVE_LLM_BASE_URL`, else `OPENAI_BASE_URL`). */
  baseURL: string;
  /** Bearer token: the LLM's (`CONCLAVE_LLM_API_KEY`, else `OPENAI_API_KEY`). */
  apiKey: string;
  /** The embedding model. Env `CONCLAVE_EMBEDDING_MODEL`. */
  model: string;
  /**
   * Deadline of one call in milliseconds, retries included. A retrieval waits for it before the
   * turn's agents run, so it is short. Env `CONCLAVE_EMBEDDING_TIMEOUT_MS`. Default 2000.
   */
  timeoutMs: number;
  /** Retries of a failed request (408, 409, 429, 5xx, connection): the LLM's (`CONCLAVE_LLM_MAX_RETRIES`). */
  maxRetries: number;
  /**
   * Vector size to ask for (`dimensions`, for models that can shorten their vectors, e.g.
   * text-embedding-3-*); vectors of any other size are refused. Env `CONCLAVE_EMBEDDING_DIMENSIONS`,
   * 1 to 1536 (the most a memory node keeps). Default: the model's own size.
   */
  dimensions?: number;
}

/** The defaults of {@link OpenAIEmbeddingConfig}. */
export const EMBEDDING_CONFIG_DEFAULTS = { timeoutMs: CONFIG_SCHEMA.CONCLAVE_EMBEDDING_TIMEOUT_MS.default } as const;

/** The value of `CONCLAVE_EMBEDDING_MODEL` that selects {@link offlineEmbedder}. */
export const OFFLINE_EMBEDDING_MODEL = "offline";

/** The embedding settings in the environment are unusable; the one-line message names the variable. */
export class EmbeddingConfigError extends LlmConfigError {}

/** An embeddings call that failed: an {@link LlmError} whose caller is `embeddings`. */
export class EmbeddingError extends LlmError {
  constructor(code: LlmErrorCode, message: string, options: LlmErrorOptions = {}) {
    super(code, "embeddings", message, options);
  }
}

/**
 * Reads the embedding settings: `null` when `CONCLAVE_EMBEDDING_MODEL` is unset or empty (memory
 * ranks without embeddings: topic overlap, then recurrence and recency); the offline embedder when
 * it is `offline`; else that model on the LLM's server (`CONCLAVE_LLM_BASE_URL`, its API key and
 * retries), which must then be set.
 *
 * @param llm The LLM settings to take the server from; default: read from `env`
 *   ({@link llmConfigFromEnv}). `null` says there is no server: only `offline` can work then.
 * @throws EmbeddingConfigError naming the variable that is wrong (or the LLM's LlmConfigError).
 */
export function embeddingConfigFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  llm?: LlmConfig | null,
): EmbeddingConfig | null {
  const error = (message: string) => new EmbeddingConfigError(message);
  const model = setting(env, "CONCLAVE_EMBEDDING_MODEL", { error });
  if (model === undefined) return null;
  if (model === OFFLINE_EMBEDDING_MODEL) return { kind: "offline", dims: OFFLINE_EMBEDDING_DIMS };
  const server = llm === undefined ? llmConfigFromEnv(env) : llm;
  if (!server) {
    throw new EmbeddingConfigError(
      `CONCLAVE_EMBEDDING_MODEL=${JSON.stringify(model)} needs CONCLAVE_LLM_BASE_URL or OPENAI_BASE_URL, or OPENAI_API_KEY for OpenAI (embeddings go to the LLM server's /embeddings): set one, or set CONCLAVE_EMBEDDING_MODEL=offline, or unset it`,
    );
  }
  const dimensions = setting(env, "CONCLAVE_EMBEDDING_DIMENSIONS", { error });
  return {
    kind: "openai",
    baseURL: server.baseURL,
    apiKey: server.apiKey,
    model,
    timeoutMs: setting(env, "CONCLAVE_EMBEDDING_TIMEOUT_MS", { error }),
    maxRetries: server.maxRetries,
    ...(dimensions === undefined ? {} : { dimensions }),
  };
}

/** The embedder for a configuration; `undefined` for `null` (no embeddings). */
export function createEmbedder(config: EmbeddingConfig | null): Embedder | undefined {
  if (!config) return undefined;
  return withEmbeddingSpans(config.kind === "offline" ? offlineEmbedder(config.dims) : openAIEmbedder(config));
}

/**
 * The deterministic offline embedder: {@link offlineEmbedding} of each text (a hashed bag of its
 * topics, length 1). It is NOT semantic: texts are close only when they share topic tags. It lets
 * the paths that rank by embeddings run, and be tested, without an embedding model.
 */
export function offlineEmbedder(dims: number = OFFLINE_EMBEDDING_DIMS): Embedder {
  if (!Number.isInteger(dims) || dims < 1) throw new RangeError(`dims must be a positive integer, got ${dims}`);
  return {
    id: `offline:${dims}`,
    model: OFFLINE_EMBEDDING_MODEL,
    embed: async (texts, signal) => {
      signal?.throwIfAborted();
      return texts.map((text) => offlineEmbedding(text, dims));
    },
  };
}

/**
 * An embedder on an OpenAI-compatible `POST /embeddings`, through the official `openai` client:
 * one request per `embed` call, all the texts in its `input`, vectors asked as floats
 * (`encoding_format: "float"`, which every compatible server speaks). The client retries 408, 409,
 * 429, 5xx and connection failures (`maxRetries`, with backoff); the call as a whole has
 * `timeoutMs`. An answer without exactly one finite vector per text, all of one size (the
 * configured `dimensions`, if any), is an `invalid_output` {@link EmbeddingError}.
 */
export function openAIEmbedder(config: Omit<OpenAIEmbeddingConfig, "kind">): Embedder {
  // Made on first use: `openai` is an optional peer, imported when embeddings are first asked for.
  let made: OpenAI | undefined;
  const openai = async () => {
    if (made) return made;
    const { OpenAI } = await loadOpenAI();
    registerSecrets([config.apiKey]);
    made ??= new OpenAI({
      baseURL: config.baseURL,
      apiKey: config.apiKey,
      timeout: config.timeoutMs,
      maxRetries: config.maxRetries,
    });
    return made;
  };
  const { model, dimensions, timeoutMs } = config;
  return {
    id: `openai:${model}${dimensions === undefined ? "" : `@${dimensions}`}`,
    model,
    embed: async (texts, signal, onUsage) => {
      if (texts.length === 0) return [];
      // Ours, not the client's timeout, which is per attempt: this one bounds the call, retries included.
      const deadline = deadlineSignal(timeoutMs, signal);
      try {
        const client = await openai();
        const response = await unlessAborted(
          client.embeddings.create(
            {
              model,
              input: [...texts],
              encoding_format: "float",
              ...(dimensions === undefined ? {} : { dimensions }),
            },
            { signal: deadline, timeout: Math.max(1, Math.ceil(timeoutMs)) },
          ),
          deadline,
        );
        const vectors = vectorsOf(response, texts.length, dimensions);
        // Embeddings are billed by their input tokens, on the model asked for (the name the price table uses).
        const tokens = response?.usage?.prompt_tokens;
        if (onUsage && Number.isInteger(tokens) && tokens >= 0)
          onUsage({ prompt_tokens: tokens, completion_tokens: 0, model });
        return vectors;
      } catch (error) {
        throw failure(error, timeoutMs, deadline);
      }
    },
  };
}

/** The response's vectors in input order, checked: one per text, finite numbers, one size. */
function vectorsOf(response: CreateEmbeddingResponse, count: number, dimensions: number | undefined): number[][] {
  const data: unknown = response?.data;
  if (!Array.isArray(data) || data.length !== count) {
    const got = Array.isArray(data) ? `${data.length} vectors` : "no data list";
    throw new EmbeddingError("invalid_output", `asked for ${count} vectors, got ${got}`);
  }
  const vectors = new Array<number[] | undefined>(count);
  let size = dimensions;
  for (const item of data as { index?: unknown; embedding?: unknown }[]) {
    const index = item?.index;
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= count || vectors[index as number]) {
      throw new EmbeddingError(
        "invalid_output",
        `vector index ${JSON.stringify(index)} is missing, repeated or out of range`,
      );
    }
    const embedding = item.embedding;
    if (!Array.isArray(embedding) || embedding.length === 0 || !embedding.every(Number.isFinite)) {
      throw new EmbeddingError("invalid_output", `vector ${index} is not a non-empty list of finite numbers`);
    }
    size ??= embedding.length;
    if (embedding.length !== size) {
      throw new EmbeddingError(
        "invalid_output",
        `vector ${index} has ${embedding.length} dimensions, expected ${size}`,
      );
    }
    vectors[index as number] = embedding as number[];
  }
  return vectors as number[][];
}

/** The deadline's verdict wins (after an abort the client may report anything), then the client's error. */
function failure(error: unknown, timeoutMs: number, deadline: AbortSignal): EmbeddingError {
  if (error instanceof EmbeddingError) return error;
  if (timedOut(deadline)) return new EmbeddingError("timeout", `no reply within ${timeoutMs} ms`, { cause: error });
  if (deadline.aborted) return new EmbeddingError("aborted", "the caller aborted", { cause: error });
  const mapped = llmErrorFromOpenAI(error, "embeddings");
  return new EmbeddingError(mapped.code, messageOf(error), {
    ...(mapped.status === undefined ? {} : { status: mapped.status }),
    cause: error,
  });
}
