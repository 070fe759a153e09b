/**
 * Events written by an earlier release read as they were: a later release's reader (the client, the runner's
 * takeover) parses them, where a zone it added is absent (the rolling-upgrade test runs both releases).
 */
import { describe, expect, it } from "vitest";
import { ContextPlannedPayload } from "../../src/contracts/context.ts";
import { EventPayloads } from "../../src/contracts/events.ts";

const zone = { floor: 0, cap: 100, demand_tokens: 5, tokens: 5, kept: ["user_message"], dropped: [] };

describe("an earlier release's CONTEXT_PLANNED", () => {
  it("parses without the zones added since, each read as empty", () => {
    // 0.2.0's zones: no rag_external.
    const zones = Object.fromEntries(
      ["identity_persona", "truth", "task_state", "tool_failures", "working_memory", "recall"].map((name) => [
        name,
        zone,
      ]),
    );
    const parsed = ContextPlannedPayload.safeParse({
      encoding: "cl100k_base",
      encoding_exact: false,
      pressure: { level: "normal", ratio: 0.1, usage_tokens: 5, total_tokens: 100 },
      target_tokens: 100,
      planned_tokens: 5,
      zones,
      dropped: [],
      truncated: [],
      floors_relaxed: false,
    });
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    expect(parsed.data?.zones.task_state).toEqual(zone);
    expect(parsed.data?.zones.rag_external).toEqual({
      floor: 0,
      cap: 0,
      demand_tokens: 0,
      tokens: 0,
      kept: [],
      dropped: [],
    });
  });
});

describe("MEMORY_COMMITTED with and without the insights it raised", () => {
  it("parses an earlier release's (no insights) and keeps a later one's ids", () => {
    const earlier = { summary: "episode of turn 1", stored: true };
    expect(EventPayloads.MEMORY_COMMITTED.parse(earlier)).toEqual(earlier);
    const later = { ...earlier, insights: ["insight.recurring_topic.0123456789abcdef"] };
    expect(EventPayloads.MEMORY_COMMITTED.parse(later)).toEqual(later);
  });
});
