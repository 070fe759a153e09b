import type { Usage } from "../contracts/usage.ts";

/** Reads a server's usage object; servers may omit it or either count, which then counts as 0. */
export function usageFrom(
  raw: { prompt_tokens?: number | null; completion_tokens?: number | null } | null | undefined,
): Usage {
  return { prompt_tokens: raw?.prompt_tokens ?? 0, completion_tokens: raw?.completion_tokens ?? 0 };
}
