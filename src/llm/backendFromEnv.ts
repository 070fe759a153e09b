import { type CognitionBackend, offlineBackend } from "../cognition/backend.ts";
import { createChatModel, llmConfigFromEnv, OpenAIChatModel } from "./index.ts";
import { llmBackend } from "./llmBackend.ts";
import { loadOpenAI } from "./openaiPackage.ts";

/**
 * LLM mode when an API key or a base URL is set (see llmConfigFromEnv: OPENAI_API_KEY alone is
 * OpenAI with the default model), else the deterministic offline model. A half-set configuration
 * throws LlmConfigError naming the variable, so a typo never silently goes offline.
 */
export function backendFromEnv(env: NodeJS.ProcessEnv = process.env): CognitionBackend {
  const config = llmConfigFromEnv(env);
  return config ? llmBackend(createChatModel(config)) : offlineBackend;
}

/**
 * Imports what the backend needs that is an optional peer (`openai`, in LLM mode), so a process
 * without it fails at start, in one line naming the package, rather than at its first turn.
 */
export async function loadBackendPackages(backend: CognitionBackend): Promise<void> {
  if (backend.model instanceof OpenAIChatModel) await loadOpenAI();
}
