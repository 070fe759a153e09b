/**
 * The GenAI spans of the workers' work, after the OpenTelemetry GenAI semantic
 * conventions: `invoke_agent <agent>` for an agent run, `chat <model>` for a
 * model call, `execute_tool <tool>` for a tool call, `embeddings <model>` for
 * an embedding call. Each runs its work as the active span, so what the work
 * calls (a model, a tool, another request) is its child. Call the `in…Span`
 * ones only when `tracingActive()`.
 */
import { context, type Span, SpanKind } from "@opentelemetry/api";
import type { Usage } from "../contracts/usage.ts";
import { CONCLAVE, GEN_AI, PROVIDER_OFFLINE, PROVIDER_OPENAI, providerAttributes, setUsage } from "./attributes.ts";
import { conclaveTracer, inSpan, recordFailure, tracingActive } from "./tracer.ts";

/** An agent request, as far as its span needs it. */
interface AgentCall {
  session_id: string;
  turn_id: number;
  mode: string;
  wave?: number;
  round?: number;
}

/** The provider behind a model: an OpenAI-compatible endpoint, or the deterministic offline model. */
export const providerOf = (model: { model: string } | undefined): string =>
  model && model.model !== "offline" ? PROVIDER_OPENAI : PROVIDER_OFFLINE;

/** Runs an agent in its `invoke_agent <agent>` span; the answer's usage is recorded on it. */
export function inAgentSpan<T extends { usage?: Usage | undefined }>(
  agentId: string,
  request: AgentCall,
  model: { model: string } | undefined,
  run: () => Promise<T>,
): Promise<T> {
  return inSpan(
    `invoke_agent ${agentId}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        [GEN_AI.operationName]: "invoke_agent",
        [GEN_AI.agentName]: agentId,
        [GEN_AI.agentId]: agentId,
        ...(model ? { [GEN_AI.requestModel]: model.model } : {}),
        ...providerAttributes(providerOf(model)),
        [CONCLAVE.sessionId]: request.session_id,
        [CONCLAVE.turnId]: request.turn_id,
        "conclave.agent.mode": request.mode,
        ...(request.wave !== undefined ? { "conclave.agent.wave": request.wave } : {}),
        ...(request.round !== undefined ? { "conclave.agent.round": request.round } : {}),
      },
    },
    async (span) => {
      const answer = await run();
      setUsage(span, answer.usage);
      return answer;
    },
  );
}

/** A model call, as far as its span needs it. */
interface ModelCall {
  caller: string;
  maxTokens?: number | undefined;
}

/** The attributes of a `chat <model>` span. */
function chatAttributes(model: string, provider: string, call: ModelCall) {
  return {
    [GEN_AI.operationName]: "chat",
    [GEN_AI.requestModel]: model,
    ...providerAttributes(provider),
    [CONCLAVE.caller]: call.caller,
    ...(call.maxTokens !== undefined ? { [GEN_AI.requestMaxTokens]: call.maxTokens } : {}),
  };
}

/**
 * Runs one model call in its `chat <model>` client span; `run` records the
 * call's usage on the span it is given (`setUsage`) when it knows it.
 */
export function inChatSpan<T>(
  model: string,
  provider: string,
  call: ModelCall,
  run: (span: Span) => Promise<T>,
): Promise<T> {
  return inSpan(`chat ${model}`, { kind: SpanKind.CLIENT, attributes: chatAttributes(model, provider, call) }, run);
}

/**
 * A streamed model call's parts, passed through, in its `chat <model>` client
 * span: from the first read to the end of the stream (or the reader's stop),
 * with the usage the producer left in `sink` once it ends.
 */
export async function* inChatStreamSpan<T>(
  model: string,
  provider: string,
  call: ModelCall,
  sink: { usage: Usage },
  produce: () => AsyncIterable<T>,
): AsyncGenerator<T, void, undefined> {
  const span = conclaveTracer().startSpan(
    `chat ${model}`,
    { kind: SpanKind.CLIENT, attributes: chatAttributes(model, provider, call) },
    context.active(),
  );
  try {
    yield* produce();
    setUsage(span, sink.usage);
  } catch (error) {
    recordFailure(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** A tool call, as far as its span needs it. */
interface ToolCall {
  session_id: string;
  turn_id: number;
  call_id: string;
  mode: string;
}

/** Runs one tool call where the tool is hosted, in its `execute_tool <tool>` span. */
export function inToolSpan<T>(tool: string, call: ToolCall, run: () => Promise<T>): Promise<T> {
  return inSpan(
    `execute_tool ${tool}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        [GEN_AI.operationName]: "execute_tool",
        [GEN_AI.toolName]: tool,
        [GEN_AI.toolCallId]: call.call_id,
        [CONCLAVE.sessionId]: call.session_id,
        [CONCLAVE.turnId]: call.turn_id,
        "conclave.tool.mode": call.mode,
      },
    },
    run,
  );
}

/** The tokens of one embeddings call (see `Embedder.embed`). */
type EmbeddingUsage = { prompt_tokens: number; completion_tokens: number; model?: string };

/** An embedder, as far as its spans need it. */
interface EmbedderLike {
  readonly id: string;
  readonly model: string;
  embed(texts: readonly string[], signal?: AbortSignal, onUsage?: (usage: EmbeddingUsage) => void): Promise<number[][]>;
}

/**
 * `embedder` with each `embed` call in an `embeddings <model>` client span.
 * Decided when it is made: without a tracer provider registered then, it is
 * returned as it is.
 */
export function withEmbeddingSpans<E extends EmbedderLike>(embedder: E): E {
  if (!tracingActive()) return embedder;
  const provider = embedder.id.startsWith("offline") ? PROVIDER_OFFLINE : PROVIDER_OPENAI;
  const embed = embedder.embed.bind(embedder);
  return {
    ...embedder,
    embed: (texts: readonly string[], signal?: AbortSignal, onUsage?: (usage: EmbeddingUsage) => void) =>
      inSpan(
        `embeddings ${embedder.model}`,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            [GEN_AI.operationName]: "embeddings",
            [GEN_AI.requestModel]: embedder.model,
            ...providerAttributes(provider),
            "conclave.embeddings.inputs": texts.length,
          },
        },
        () => embed(texts, signal, onUsage),
      ),
  };
}
