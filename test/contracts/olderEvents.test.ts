/**
 * Events written by an earlier release read as they were: a later release's reader (the client, the runner's
 * takeover) parses them, where a zone it added is absent (the rolling-upgrade test runs both releases).
 */
import { describe, expect, it } from "vitest";
import { subjects } from "../../src/bus/subjects.ts";
import { ContextArenaState, ContextCompactedPayload, ContextPlannedPayload } from "../../src/contracts/context.ts";
import { EventPayloads } from "../../src/contracts/events.ts";
import { Ledgers } from "../../src/contracts/ledger.ts";
import { rangeFilter } from "../../src/eventlog/query.ts";

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

describe("compaction requests beside an earlier release", () => {
  it("an earlier CONTEXT_COMPACTED, arena and ledger projection parse: no reason (the pressure), nothing consumed", () => {
    const compacted = ContextCompactedPayload.parse({
      summariser: "offline",
      pressure: { level: "compact", ratio: 0.85, usage_tokens: 85, total_tokens: 100 },
      through_turn: 3,
      turns_compacted: [1, 2, 3],
      tokens_before: 80,
      tokens_after: 20,
      summary: "T1: …",
    });
    expect(compacted.reason).toBeUndefined();
    expect(ContextArenaState.parse({ summary: null, observed_tokens: 0, compactions: 1 }).compaction_request_seq).toBe(
      undefined,
    );
    const ledgers = Ledgers.parse({
      session_id: "s1",
      truth: { facts: [] },
      task: { spec: null, items: [], blockers: [] },
      through_seq: 4,
      events: 1,
    });
    expect(ledgers.compaction).toBeUndefined();
  });

  it("COMPACTION_REQUESTED is stored where an earlier turn reader does not read", () => {
    // Readers of a session's turns filter `conclave.events.<i>.<session>.*` (one token): the ledger entries' subject
    // has two more, so an earlier client never meets the new kind; an earlier ledger fold skips it (onInvalid).
    const filter = rangeFilter("s1", 3);
    const ledger = subjects.ledgerEvents("s1", 3);
    expect(filter.endsWith(".*")).toBe(true);
    expect(ledger.startsWith(filter.slice(0, -1))).toBe(true);
    expect(ledger.slice(filter.length - 1).split(".")).toHaveLength(2);
  });
});
