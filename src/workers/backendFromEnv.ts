import { type CognitionBackend, offlineBackend } from "../cognition/backend.ts";
import { createChatModel, llmConfigFromEnv } from "../llm/index.ts";
import { llmBackend } from "../llm/llmBackend.ts";

/**
 * LLM mode when CONCLAVE_LLM_BASE_URL is set (with CONCLAVE_LLM_MODEL), else
 * the deterministic offline model. A half-set configuration throws
 * LlmConfigError naming the variable, so a typo never silently goes offline.
 */
export function backendFromEnv(env: NodeJS.ProcessEnv = process.env): CognitionBackend {
  const config = llmConfigFromEnv(env);
  return config ? llmBackend(createChatModel(config)) : offlineBackend;
}
