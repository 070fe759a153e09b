import type { z } from "zod";
import type { Usage } from "../contracts/usage.ts";

/** Tokens one call consumed, as the server reported them. */
export type { Usage } from "../contracts/usage.ts";

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

export interface StructuredResult<T> {
  value: T;
  usage: Usage;
  attempts: number;
}

export interface StreamRequest {
  caller: string;
  system: string;
  user: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  maxTokens?: number;
}

export type StreamPart = { type: "content" | "reasoning"; delta: string };

export interface TextStream extends AsyncIterable<StreamPart> {
  /** Resolves after the stream ends (zeros if the server sent none). */
  readonly usage: Promise<Usage>;
}

export interface ChatModel {
  /** The model id in use. */
  readonly model: string;
  structured<S extends z.ZodType>(request: StructuredRequest<S>): Promise<StructuredResult<z.infer<S>>>;
  stream(request: StreamRequest): TextStream;
}
