/**
 * What a language model offers the agents: the ChatModel interface (completions,
 * structured outputs, streams, tool calls) that src/llm/ implements and that
 * cognition, agents and memory are given.
 */
import type { z } from "zod";
import type { Usage } from "./usage.ts";

/** Tokens one call consumed, as the server reported them. */
export type { Usage } from "./usage.ts";

/** One call for an answer validated by a zod schema (structured output). */
export interface StructuredRequest<S extends z.ZodType> {
  /** Who asks, for usage accounting and errors: "agent:emotion.stress", "council", "critic:coherence". */
  caller: string;
  system: string;
  user: string;
  schema: S;
  /** The json_schema name sent in response_format (letters, digits, _ and -). */
  schemaName: string;
  signal?: AbortSignal;
  /** Per-call deadline; default from config. */
  timeoutMs?: number;
  maxTokens?: number;
}

/** A structured answer, with the tokens it took and how many attempts. */
export interface StructuredResult<T> {
  value: T;
  usage: Usage;
  attempts: number;
}

/** One call for free text, streamed. */
export interface StreamRequest {
  caller: string;
  system: string;
  user: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  maxTokens?: number;
}

/** A piece of a streamed answer: its text (`content`) or the model's thinking (`reasoning`). */
export type StreamPart = { type: "content" | "reasoning"; delta: string };

/** A streamed answer: its pieces as they come, then its usage. */
export interface TextStream extends AsyncIterable<StreamPart> {
  /** Resolves after the stream ends (zeros if the server sent none). */
  readonly usage: Promise<Usage>;
}

/** A tool offered to a model, as the model sees it (what `defineTool` takes is ToolSpec). */
export interface ModelTool {
  /** The OpenAI function name (letters, digits, _ and -). */
  name: string;
  description: string;
  /** The JSON Schema of the call's arguments. */
  parameters: Record<string, unknown>;
}

/** One call the model asked for. */
export interface ModelToolCall {
  /** The model's id for the call; the `tool` message answering it repeats it. */
  id: string;
  name: string;
  /** The arguments as JSON text, exactly as the model sent them (it may not be valid JSON). */
  arguments: string;
}

/** One message of a tool-calling conversation, in the chat completions shape. */
export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ModelToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** One round of a conversation with tools (see `runToolLoop`). */
export interface CompleteRequest {
  caller: string;
  messages: ChatMessage[];
  /** The tools offered; an empty list offers none. */
  tools: ModelTool[];
  signal?: AbortSignal;
  timeoutMs?: number;
  maxTokens?: number;
}

/** The model's reply in one round: text, tool calls, or both. */
export interface CompleteResult {
  content: string | null;
  /** Empty when the model asked for no tool. */
  toolCalls: ModelToolCall[];
  usage: Usage;
}

/**
 * An OpenAI-compatible chat model as Conclave uses it: structured answers,
 * streamed text, and tool-calling rounds (OpenAIChatModel; OfflineToolModel
 * for the deterministic offline mode).
 */
export interface ChatModel {
  /** The model id in use. */
  readonly model: string;
  /** One answer validated by the request's schema. */
  structured<S extends z.ZodType>(request: StructuredRequest<S>): Promise<StructuredResult<z.infer<S>>>;
  /** Free text, streamed. */
  stream(request: StreamRequest): TextStream;
  /** One non-streaming round of a conversation with tools (see `runToolLoop` for the loop). */
  complete(request: CompleteRequest): Promise<CompleteResult>;
}
