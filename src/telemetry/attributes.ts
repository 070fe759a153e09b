/**
 * The span attribute names Conclave sets: the OpenTelemetry GenAI semantic
 * conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/) for agent,
 * model and tool spans, and Conclave's own for sessions and turns.
 */
import type { Span } from "@opentelemetry/api";
import type { Usage } from "../contracts/usage.ts";

/** The GenAI attribute names (`gen_ai.operation.name` is `invoke_agent`, `chat`, `execute_tool` or `embeddings`). */
export const GEN_AI = {
  operationName: "gen_ai.operation.name",
  agentName: "gen_ai.agent.name",
  agentId: "gen_ai.agent.id",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  requestModel: "gen_ai.request.model",
  requestMaxTokens: "gen_ai.request.max_tokens",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  providerName: "gen_ai.provider.name",
  /** The older name of `gen_ai.provider.name`, still read by many backends: both are set. */
  system: "gen_ai.system",
} as const;

/** Conclave's own attribute names. */
export const CONCLAVE = {
  sessionId: "conclave.session_id",
  turnId: "conclave.turn_id",
  /** The runner endpoint, scheduler, council, voice, critic or memory operation a request is for. */
  endpoint: "conclave.endpoint",
  /** Who asked a model: "agent:emotion.stress", "council", "critic:coherence". */
  caller: "conclave.caller",
  /** A turn started again by another runner after its first one died. */
  takeover: "conclave.takeover",
  /** How a turn left the runner: done, failed, expired, suspended, handed_back. */
  turnEnd: "conclave.turn.end",
} as const;

/** The provider name of OpenAI-compatible endpoints (`gen_ai.provider.name`). */
export const PROVIDER_OPENAI = "openai";
/** The provider name of the deterministic offline model and embedder. */
export const PROVIDER_OFFLINE = "conclave.offline";

/** `gen_ai.provider.name` and its older name `gen_ai.system`, both set to `provider`. */
export function providerAttributes(provider: string): Record<string, string> {
  return { [GEN_AI.providerName]: provider, [GEN_AI.system]: provider };
}

/** The token counts of a call, on its span. */
export function setUsage(span: Span, usage: Usage | undefined): void {
  if (!usage) return;
  span.setAttribute(GEN_AI.inputTokens, usage.prompt_tokens);
  span.setAttribute(GEN_AI.outputTokens, usage.completion_tokens);
}

/** The session and turn of a request, when it names them (itself, or its `episode` for a memory commit). */
export function turnAttributes(request: unknown): Record<string, string | number> {
  if (typeof request !== "object" || request === null) return {};
  const fields = request as Record<string, unknown>;
  const episode = fields.episode;
  const { session_id, turn_id } =
    fields.session_id === undefined && typeof episode === "object" && episode !== null
      ? (episode as Record<string, unknown>)
      : fields;
  const attributes: Record<string, string | number> = {};
  if (typeof session_id === "string") attributes[CONCLAVE.sessionId] = session_id;
  if (typeof turn_id === "number") attributes[CONCLAVE.turnId] = turn_id;
  return attributes;
}
