import type { ChatModel } from "../contracts/model.ts";
import type { LlmConfig } from "./config.ts";
import { OpenAIChatModel } from "./openaiModel.ts";

export type {
  ChatMessage,
  ChatModel,
  CompleteRequest,
  CompleteResult,
  ModelTool,
  ModelToolCall,
  StreamPart,
  StreamRequest,
  StructuredRequest,
  StructuredResult,
  TextStream,
  Usage,
} from "../contracts/model.ts";
export type { LlmErrorCode } from "../errors.ts";
export { LLM_CONFIG_DEFAULTS, type LlmConfig, LlmConfigError, llmConfigFromEnv } from "./config.ts";
export { LlmError, type LlmErrorOptions, llmErrorFromOpenAI } from "./errors.ts";
export { OfflineToolModel } from "./offlineModel.ts";
export { OpenAIChatModel } from "./openaiModel.ts";
export { responseFormatFor } from "./responseFormat.ts";
export {
  DEFAULT_TOOL_ROUNDS,
  runToolLoop,
  type ToolLoopCall,
  ToolLoopExhaustedError,
  type ToolLoopOptions,
  type ToolLoopResult,
} from "./toolLoop.ts";
export { usageFrom } from "./usage.ts";

/** The ChatModel for a configured endpoint (see `llmConfigFromEnv`; `null` there means offline). */
export function createChatModel(config: LlmConfig): ChatModel {
  return new OpenAIChatModel(config);
}
