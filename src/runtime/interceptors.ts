import type { StreamId } from "../contracts/council.ts";
import type { Sensors } from "../contracts/workspace.ts";

/**
 * Interception layer (middleware), after the seed's IRequestInterceptor and
 * IResponseInterceptor: cross-cutting checks every turn passes through.
 * Request interceptors see the user's message with the fast sensors' scores
 * before any agent does; response interceptors see every packet the voice
 * streams. Each may pass, redact (replace the text) or block.
 */
export interface InterceptorContext {
  readonly request_id: string;
  /** Epoch milliseconds when the turn started. */
  readonly start_time: number;
  readonly session_id: string;
  readonly turn_id: number;
}

export type Verdict =
  | { action: "pass" }
  | { action: "redact"; text: string; reason: string }
  | { action: "block"; reason: string };

export interface RequestInterceptor {
  readonly name: string;
  onRequest(request: { text: string; sensors: Sensors }, context: InterceptorContext): Verdict;
}

export interface ResponseInterceptor {
  readonly name: string;
  /** `redact` replaces the packet's text; `block` drops the packet. */
  onPacket(packet: { stream_id: StreamId; delta: string }, context: InterceptorContext): Verdict;
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

/** Runs the response chain on one packet: the packet to send (null when blocked) and what was done to it. */
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

const EMAIL = /[\w.+-]+@[\w-]+(\.[\w-]+)+/g;
const PHONE = /\+?\d[\d\s().-]{7,}\d/g;

const redactPii = (text: string): { text: string; found: string[] } => {
  const found: string[] = [];
  const redacted = text
    .replace(EMAIL, () => {
      found.push("email");
      return "[email]";
    })
    .replace(PHONE, () => {
      found.push("phone");
      return "[phone]";
    });
  return { text: redacted, found };
};

/** Replaces e-mail addresses and phone numbers, in what the user says and in what the voice streams. */
export const piiRedaction: RequestInterceptor & ResponseInterceptor = {
  name: "pii",
  onRequest: ({ text }) => {
    const { text: redacted, found } = redactPii(text);
    return found.length === 0
      ? { action: "pass" }
      : { action: "redact", text: redacted, reason: `redacted ${found.join(", ")}` };
  },
  onPacket: ({ delta }) => {
    const { text: redacted, found } = redactPii(delta);
    return found.length === 0
      ? { action: "pass" }
      : { action: "redact", text: redacted, reason: `redacted ${found.join(", ")}` };
  },
};

const INSTRUCTION = /[^.!?\n]*\b(ignore|disregard|forget|pretend|jailbreak|system prompt)\b[^.!?\n]*[.!?]?/gi;

/**
 * Acts on the prompt-injection sensor: at or above `threshold` the sentences
 * carrying the injected instruction are removed (`redact`, the default) or
 * the whole turn is refused (`block`).
 */
export function promptInjectionGuard(
  options: { threshold?: number; mode?: "redact" | "block" } = {},
): RequestInterceptor {
  const threshold = options.threshold ?? 0.5;
  const mode = options.mode ?? "redact";
  return {
    name: "prompt_injection",
    onRequest: ({ text, sensors }) => {
      if (sensors.prompt_injection < threshold) return { action: "pass" };
      const reason = `prompt-injection sensor at ${sensors.prompt_injection.toFixed(2)}`;
      if (mode === "block") return { action: "block", reason };
      const cleaned = text.replace(INSTRUCTION, " [instruction removed] ").replace(/\s+/g, " ").trim();
      return { action: "redact", text: cleaned, reason };
    },
  };
}

export interface InterceptorChains {
  request: RequestInterceptor[];
  response: ResponseInterceptor[];
}

export const defaultInterceptors = (): InterceptorChains => ({
  request: [promptInjectionGuard(), piiRedaction],
  response: [piiRedaction],
});
