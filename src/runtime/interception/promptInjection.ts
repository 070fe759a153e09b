import type { RequestInterceptor } from "./interceptors.ts";

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
