import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import type { StreamPart, TextStream, Usage } from "../contracts/model.ts";
import { noUsage } from "../contracts/usage.ts";

/** Where a producer records the usage it saw; read when the stream ends. */
export interface UsageSink {
  usage: Usage;
}

/**
 * A TextStream over a producer that starts when iteration starts (so an unread stream sends no
 * request) and can be iterated once. `usage` resolves when iteration ends, however it ends, with
 * what the producer recorded (zeros if nothing); it never rejects — errors come through iteration.
 */
export class LazyTextStream implements TextStream {
  readonly usage: Promise<Usage>;
  readonly #produce: (sink: UsageSink) => AsyncIterable<StreamPart>;
  #resolveUsage!: (usage: Usage) => void;
  #started = false;

  constructor(produce: (sink: UsageSink) => AsyncIterable<StreamPart>) {
    this.#produce = produce;
    this.usage = new Promise((resolve) => {
      this.#resolveUsage = resolve;
    });
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<StreamPart, void, undefined> {
    if (this.#started) throw new Error("a TextStream can be iterated only once");
    this.#started = true;
    const sink: UsageSink = { usage: noUsage() };
    try {
      yield* this.#produce(sink);
    } finally {
      this.#resolveUsage(sink.usage);
    }
  }
}

/** Reasoning fields that OpenAI-compatible servers add to a delta; which one depends on the server. */
interface ReasoningDelta {
  /** DeepSeek, llama.cpp, older vLLM. */
  reasoning_content?: string | null;
  /** Ollama, OpenRouter, newer vLLM. */
  reasoning?: string | null;
}

/** The text a chunk carries: reasoning first, then content; empty deltas are dropped. */
export function partsOfChunk(chunk: ChatCompletionChunk): StreamPart[] {
  const delta = chunk.choices[0]?.delta as (ChatCompletionChunk.Choice.Delta & ReasoningDelta) | undefined;
  if (!delta) return [];
  const parts: StreamPart[] = [];
  // A server sending both fields sends the same text twice: take one.
  const reasoning = delta.reasoning_content || delta.reasoning;
  if (reasoning) parts.push({ type: "reasoning", delta: reasoning });
  if (delta.content) parts.push({ type: "content", delta: delta.content });
  return parts;
}
