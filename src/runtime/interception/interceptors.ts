import type { AgentContext, AgentRequest } from "../../contracts/agent.ts";
import type { StreamId } from "../../contracts/council.ts";
import type { Sensors } from "../../contracts/workspace.ts";
import { ConclaveError } from "../../errors.ts";
import { piiHoldBack, redactPii } from "./pii.ts";
import { promptInjectionGuard } from "./promptInjection.ts";

export { promptInjectionGuard };

/**
 * Interception layer (middleware): request and response interceptors, the
 * cross-cutting checks every turn passes through.
 * Request interceptors see the user's message with the fast sensors' scores
 * before any agent does; response interceptors see every stream the voice
 * produces, as a stream: each may pass, redact (replace the text) or block.
 */
export interface InterceptorContext {
  readonly request_id: string;
  /** Epoch milliseconds when the turn started. */
  readonly start_time: number;
  readonly session_id: string;
  readonly turn_id: number;
}

/** What an interceptor decides: let it through, replace its text (saying why), or drop it. */
export type Verdict =
  | { action: "pass" }
  | { action: "redact"; text: string; reason: string }
  | { action: "block"; reason: string };

/**
 * What a request interceptor decides on an agent's request: let it through,
 * replace what the agent is given (its `context`: the message, memory,
 * workspace), saying why, or refuse the call.
 */
export type AgentRequestVerdict =
  | { action: "pass" }
  | { action: "redact"; context: AgentContext; reason: string }
  | { action: "block"; reason: string };

/** Sees the user's message, with the fast sensors' scores, before any agent does; and, if it asks, each agent's request. */
export interface RequestInterceptor {
  /** Named in REQUEST_INTERCEPTED events. */
  readonly name: string;
  /** Decides on the message. */
  onRequest(request: { text: string; sensors: Sensors }, context: InterceptorContext): Verdict;
  /**
   * Decides on each agent's request before that agent sees it (a wave's agent, a deliberation
   * round, a recipe node's agent, a delegated agent): the `AgentRequest` whole, its agent, wave,
   * mode, recipe inputs, offered tools and `context`, whose message `onRequest` already screened.
   * `redact` replaces the request's `context` (the rest of the request stays as it was); `block`
   * refuses the call: the agent fails with a `forbidden` error naming this interceptor and the
   * reason (AGENT_FAILED in a turn). Optional: an interceptor without it sees only the message.
   */
  onAgentRequest?(request: Readonly<AgentRequest>, context: InterceptorContext): AgentRequestVerdict;
}

/** A request interceptor refused an agent's call (`onAgentRequest`'s `block`). */
export class AgentRequestRefused extends ConclaveError<"forbidden"> {
  /** The interceptor that refused it. */
  readonly interceptor: string;
  constructor(interceptor: string, agentId: string, reason: string) {
    super("forbidden", `request interceptor ${interceptor} refused the call to ${agentId}: ${reason}`);
    this.interceptor = interceptor;
  }
}

/**
 * Sees every packet of every stream the voice produces. Without `holdBack`
 * it is given the text packet by packet, as it arrives; with it, the stream
 * is screened as a whole: `holdBack` says how many characters at the end of
 * the text not yet released must wait — not sent, not stored — until more
 * text comes or the stream ends, and `onPacket` gets only the text before
 * them, so redacting it (`redact`) or dropping it (`block`) is final.
 */
export interface ResponseInterceptor {
  /** Named in RESPONSE_INTERCEPTED events. */
  readonly name: string;
  /** Decides on a packet of a stream (see `holdBack`). */
  onPacket(packet: { stream_id: StreamId; delta: string }, context: InterceptorContext): Verdict;
  /**
   * Characters at the end of `text` (all of the stream this interceptor has
   * not yet released) to hold back. The contract: `onPacket` on the text
   * before them, then on the rest of the stream, must act exactly as it
   * would on the whole — so the tail must hold every match that more text
   * could still change, and any match the cut would split. Default: none.
   */
  holdBack?(text: string): number;
}

export interface Interception {
  interceptor: string;
  action: "redact" | "block";
  reason: string;
}

export interface ScreenResult {
  text: string;
  interceptions: Interception[];
  blocked: boolean;
}

/** Runs the request chain in order: each sees the text the previous one left; a block stops the chain. */
export function screenRequest(
  interceptors: readonly RequestInterceptor[],
  request: { text: string; sensors: Sensors },
  context: InterceptorContext,
): ScreenResult {
  let text = request.text;
  const interceptions: Interception[] = [];
  for (const interceptor of interceptors) {
    const verdict = interceptor.onRequest({ text, sensors: request.sensors }, context);
    if (verdict.action === "pass") continue;
    interceptions.push({ interceptor: interceptor.name, action: verdict.action, reason: verdict.reason });
    if (verdict.action === "block") return { text, interceptions, blocked: true };
    text = verdict.text;
  }
  return { text, interceptions, blocked: false };
}

/**
 * Runs the request chain's `onAgentRequest` in order on an agent's request:
 * each sees the request the previous one left; a block throws
 * {@link AgentRequestRefused}. Returns the request to send and what was done to it.
 */
export function screenAgentRequest(
  interceptors: readonly RequestInterceptor[],
  request: AgentRequest,
  context: InterceptorContext,
): { request: AgentRequest; interceptions: Interception[] } {
  let screened = request;
  const interceptions: Interception[] = [];
  for (const interceptor of interceptors) {
    const verdict = interceptor.onAgentRequest?.(screened, context) ?? { action: "pass" };
    if (verdict.action === "pass") continue;
    interceptions.push({ interceptor: interceptor.name, action: verdict.action, reason: verdict.reason });
    if (verdict.action === "block") throw new AgentRequestRefused(interceptor.name, request.agent_id, verdict.reason);
    screened = { ...screened, context: verdict.context };
  }
  return { request: screened, interceptions };
}

/** Runs the response chain on text that is final: the text to send (null when blocked) and what was done to it. */
export function screenPacket(
  interceptors: readonly ResponseInterceptor[],
  packet: { stream_id: StreamId; delta: string },
  context: InterceptorContext,
): { delta: string | null; interceptions: Interception[] } {
  let delta = packet.delta;
  const interceptions: Interception[] = [];
  for (const interceptor of interceptors) {
    const verdict = interceptor.onPacket({ stream_id: packet.stream_id, delta }, context);
    if (verdict.action === "pass") continue;
    interceptions.push({ interceptor: interceptor.name, action: verdict.action, reason: verdict.reason });
    if (verdict.action === "block") return { delta: null, interceptions };
    delta = verdict.text;
  }
  return { delta, interceptions };
}

const piiVerdict = (text: string): Verdict => {
  const { text: redacted, found } = redactPii(text);
  return found.length === 0
    ? { action: "pass" }
    : { action: "redact", text: redacted, reason: `redacted ${[...new Set(found)].join(", ")}` };
};

/**
 * Replaces e-mail addresses, phone numbers and card-like numbers, in what the
 * user says, in what the voice streams (across packet boundaries), and in
 * the user's message as the event log stores it.
 */
/** Redacts e-mail addresses, phone and card numbers, in messages and in streams. */
export const piiRedaction: RequestInterceptor & ResponseInterceptor = {
  name: "pii",
  onRequest: ({ text }) => piiVerdict(text),
  onPacket: ({ delta }) => piiVerdict(delta),
  holdBack: piiHoldBack,
};

/** The interceptors a runner applies, in order (`interceptors` of startRunner). */
export interface InterceptorChains {
  /** On the user's message, before the agents see it. */
  request: RequestInterceptor[];
  /** On every packet of the voice's streams. */
  response: ResponseInterceptor[];
  /**
   * Applied to the user's message as `TURN_STARTED.user_input` stores it
   * (with zero sensor scores: it is recorded before the sensors run).
   * Default: PII redaction. An empty list keeps the raw text in the log.
   */
  stored?: RequestInterceptor[];
}

/** The default chains: the prompt-injection guard and PII redaction on requests, PII redaction on responses and on what the log stores. */
export const defaultInterceptors = (): InterceptorChains => ({
  request: [promptInjectionGuard(), piiRedaction],
  response: [piiRedaction],
  stored: [piiRedaction],
});
