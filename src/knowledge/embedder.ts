import type { LlmConfig } from "../llm/config.ts";
import { createEmbedder, type Embedder, embeddingConfigFromEnv, offlineEmbedder } from "../llm/embeddings.ts";

/** The offline embedder's size for knowledge: wider than memory's 64, as chunks hold more topics than a message. */
export const KNOWLEDGE_OFFLINE_DIMS = 256;

/** The least time an indexing call to an embedding model gets: a batch of chunks is slower than one query. */
export const KNOWLEDGE_INDEXING_TIMEOUT_MS = 60_000;

/**
 * The embedders of the knowledge service: the configured embedding model (`CONCLAVE_EMBEDDING_MODEL`
 * on the LLM's server, through the `openai` client), else the offline embedder of
 * {@link KNOWLEDGE_OFFLINE_DIMS} dimensions. `indexing` embeds chunks being added, with a deadline
 * of at least {@link KNOWLEDGE_INDEXING_TIMEOUT_MS}; `query` embeds searches, with the configured
 * one. Both make vectors of one id, so what one indexed the other searches.
 */
export function knowledgeEmbedders(
  env: NodeJS.ProcessEnv = process.env,
  llm?: LlmConfig | null,
): { indexing: Embedder; query: Embedder } {
  const config = embeddingConfigFromEnv(env, llm);
  if (config?.kind === "openai") {
    const indexing = createEmbedder({
      ...config,
      timeoutMs: Math.max(config.timeoutMs, KNOWLEDGE_INDEXING_TIMEOUT_MS),
    }) as Embedder;
    return { indexing, query: createEmbedder(config) as Embedder };
  }
  const offline = offlineEmbedder(KNOWLEDGE_OFFLINE_DIMS);
  return { indexing: offline, query: offline };
}
