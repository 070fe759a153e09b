import type OpenAI from "openai";
import type {
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import type { z } from "zod";
import { registerSecrets } from "../config/secrets.ts";
import type {
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
} from "../contracts/model.ts";
import { addUsage, noUsage } from "../contracts/usage.ts";
import { deadlineSignal, timedOut, unlessAborted } from "../deadline.ts";
import { PROVIDER_OPENAI, setUsage } from "../telemetry/attributes.ts";
import { inChatSpan, inChatStreamSpan } from "../telemetry/genAiSpans.ts";
import { tracingActive } from "../telemetry/tracer.ts";
import type { LlmConfig } from "./config.ts";
import { LlmError, llmErrorFromOpenAI } from "./errors.ts";
import { checkJsonReply, withCorrection } from "./jsonReply.ts";
import { loadOpenAI } from "./openaiPackage.ts";
import { responseFormatFor } from "./responseFormat.ts";
import { LazyTextStream, partsOfChunk, type UsageSink } from "./textStream.ts";
import { usageFrom } from "./usage.ts";

/** One call's time budget and the signal that fires when it is spent or the caller aborts. */
interface CallDeadline {
  timeoutMs: number;
  signal: AbortSignal;
}

/** A reply that is not valid JSON for the schema gets one corrected second try. */
const STRUCTURED_ATTEMPTS = 2;
/** A tool round whose completion carries no message (e.g. a body of `{}`) is asked again once. */
const COMPLETE_ATTEMPTS = 2;
/** Why a completion without a message (no `choices`, e.g. a body of `{}`) is no answer. */
const NO_MESSAGE = "the completion has no choices (no message)";

/**
 * A ChatModel on any OpenAI-compatible chat completions endpoint, through the official `openai`
 * client. The client retries 408/409/429/5xx and connection failures itself (`maxRetries`, with
 * backoff that honours `retry-after-ms`); this class adds the per-call deadline, abort, JSON
 * validation with one corrected retry, and the mapping of failures onto LlmError.
 */
export class OpenAIChatModel implements ChatModel {
  readonly model: string;
  readonly #config: LlmConfig;
  readonly #timeoutMs: number;
  #client: OpenAI | undefined;

  constructor(config: LlmConfig) {
    this.model = config.model;
    this.#config = config;
    this.#timeoutMs = config.timeoutMs;
    // A key given in code (an agent's apiKeyEnv) is as secret as the configured one.
    registerSecrets([config.apiKey]);
  }

  /** The client, made on first use: `openai` is an optional peer, imported when LLM mode first runs. */
  async #openai(): Promise<OpenAI> {
    if (this.#client) return this.#client;
    const { OpenAI } = await loadOpenAI();
    const { baseURL, apiKey, timeoutMs, maxRetries } = this.#config;
    this.#client ??= new OpenAI({ baseURL, apiKey, timeout: timeoutMs, maxRetries });
    return this.#client;
  }

  structured<S extends z.ZodType>(request: StructuredRequest<S>): Promise<StructuredResult<z.infer<S>>> {
    if (!tracingActive()) return this.#structured(request);
    return inChatSpan(this.model, PROVIDER_OPENAI, request, async (span) => {
      const result = await this.#structured(request);
      setUsage(span, result.usage);
      return result;
    });
  }

  async #structured<S extends z.ZodType>(request: StructuredRequest<S>): Promise<StructuredResult<z.infer<S>>> {
    const deadline = this.#deadline(request);
    let usage = noUsage();
    let user = request.user;
    let problem = "";
    try {
      const client = await this.#openai();
      const responseFormat = responseFormatFor(request.schema, request.schemaName);
      for (let attempt = 1; attempt <= STRUCTURED_ATTEMPTS; attempt++) {
        const completion = await unlessAborted(
          client.chat.completions.create(
            {
              model: this.model,
              messages: [
                { role: "system", content: request.system },
                { role: "user", content: user },
              ],
              response_format: responseFormat,
              max_tokens: request.maxTokens,
            },
            this.#requestOptions(deadline),
          ),
          deadline.signal,
        );
        usage = addUsage(usage, usageFrom(completion?.usage));
        const message = messageOfCompletion(completion);
        const check = message
          ? checkJsonReply(message.content, request.schema)
          : { ok: false as const, problem: NO_MESSAGE };
        if (check.ok) return { value: check.value, usage, attempts: attempt };
        problem = check.problem;
        user = withCorrection(request.user, problem);
      }
    } catch (error) {
      throw failure(error, request.caller, deadline);
    }
    const message = `no valid reply in ${STRUCTURED_ATTEMPTS} attempts: ${problem}`;
    throw new LlmError("invalid_output", request.caller, message, { usage });
  }

  stream(request: StreamRequest): TextStream {
    return new LazyTextStream((sink) =>
      tracingActive()
        ? inChatStreamSpan(this.model, PROVIDER_OPENAI, request, sink, () => this.#streamParts(request, sink))
        : this.#streamParts(request, sink),
    );
  }

  async *#streamParts(request: StreamRequest, sink: UsageSink): AsyncGenerator<StreamPart, void, undefined> {
    const deadline = this.#deadline(request);
    try {
      const client = await this.#openai();
      const chunks = await unlessAborted(
        client.chat.completions.create(
          {
            model: this.model,
            messages: [
              { role: "system", content: request.system },
              { role: "user", content: request.user },
            ],
            max_tokens: request.maxTokens,
            stream: true,
            stream_options: { include_usage: true },
          },
          this.#requestOptions(deadline),
        ),
        deadline.signal,
      );
      for await (const chunk of chunks) {
        // Usually a last chunk with empty choices; some servers attach it to the final content chunk.
        if (chunk.usage) sink.usage = usageFrom(chunk.usage);
        yield* partsOfChunk(chunk);
      }
      // The openai stream ends quietly when its signal aborts: that is not a normal end.
      if (deadline.signal.aborted) throw deadline.signal.reason;
    } catch (error) {
      throw failure(error, request.caller, deadline);
    }
  }

  complete(request: CompleteRequest): Promise<CompleteResult> {
    if (!tracingActive()) return this.#complete(request);
    return inChatSpan(this.model, PROVIDER_OPENAI, request, async (span) => {
      const result = await this.#complete(request);
      setUsage(span, result.usage);
      return result;
    });
  }

  async #complete(request: CompleteRequest): Promise<CompleteResult> {
    const deadline = this.#deadline(request);
    let usage = noUsage();
    try {
      const client = await this.#openai();
      for (let attempt = 1; attempt <= COMPLETE_ATTEMPTS; attempt++) {
        const completion = await unlessAborted(
          client.chat.completions.create(
            {
              model: this.model,
              messages: request.messages.map(messageParam),
              // Some servers reject an empty tools list: offering none means leaving the field out.
              ...(request.tools.length > 0 ? { tools: request.tools.map(functionTool) } : {}),
              max_tokens: request.maxTokens,
            },
            this.#requestOptions(deadline),
          ),
          deadline.signal,
        );
        usage = addUsage(usage, usageFrom(completion?.usage));
        const message = messageOfCompletion(completion);
        if (message) return { content: message.content ?? null, toolCalls: toolCallsOf(message), usage };
      }
    } catch (error) {
      throw failure(error, request.caller, deadline);
    }
    const message = `no valid reply in ${COMPLETE_ATTEMPTS} attempts: ${NO_MESSAGE}`;
    throw new LlmError("invalid_output", request.caller, message, { usage });
  }

  /**
   * The call's deadline, ours rather than the openai client's: the client's
   * `timeout` stops at the response headers (a streamed body could stall
   * forever) and restarts on each retry.
   */
  #deadline(request: { timeoutMs?: number; signal?: AbortSignal }): CallDeadline {
    const timeoutMs = request.timeoutMs ?? this.#timeoutMs;
    return { timeoutMs, signal: deadlineSignal(timeoutMs, request.signal) };
  }

  #requestOptions(deadline: CallDeadline) {
    // The client's own timeout is per attempt and must be a positive integer; ours bounds the call.
    return { signal: deadline.signal, timeout: Math.max(1, Math.ceil(deadline.timeoutMs)) };
  }
}

function functionTool(tool: ModelTool): ChatCompletionTool {
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

function messageParam(message: ChatMessage): ChatCompletionMessageParam {
  if (message.role !== "assistant") return message;
  // An empty tool_calls list is rejected by some servers: a reply without calls carries none.
  if (!message.tool_calls?.length) return { role: "assistant", content: message.content };
  return {
    role: "assistant",
    content: message.content,
    tool_calls: message.tool_calls.map((call) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    })),
  };
}

/**
 * The completion's first message, or undefined when the server sent none: the client passes any
 * JSON body through, so a body of `{}` (or `choices: [{}]`) must be checked, not dereferenced.
 */
function messageOfCompletion(completion: unknown): ChatCompletionMessage | undefined {
  if (typeof completion !== "object" || completion === null) return undefined;
  const choices = (completion as { choices?: unknown }).choices;
  if (!Array.isArray(choices)) return undefined;
  const message = (choices[0] as { message?: unknown } | undefined)?.message;
  return typeof message === "object" && message !== null ? (message as ChatCompletionMessage) : undefined;
}

/** Function calls only: custom tools are never offered, so a custom call would be the server's mistake. */
function toolCallsOf(message: ChatCompletionMessage | undefined): ModelToolCall[] {
  const calls: ModelToolCall[] = [];
  for (const call of message?.tool_calls ?? []) {
    if (call.type !== "function") continue;
    calls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments });
  }
  return calls;
}

/** The deadline's verdict wins: after an abort the client may report anything (abort, connection, timeout). */
function failure(error: unknown, caller: string, deadline: CallDeadline): LlmError {
  if (error instanceof LlmError) return error;
  if (timedOut(deadline.signal)) {
    return new LlmError("timeout", caller, `no complete reply within ${deadline.timeoutMs} ms`, { cause: error });
  }
  if (deadline.signal.aborted) return new LlmError("aborted", caller, "the caller aborted", { cause: error });
  if (error instanceof TypeError && /schemaName/.test(error.message)) {
    return new LlmError("bad_request", caller, error.message, { cause: error });
  }
  return llmErrorFromOpenAI(error, caller);
}
