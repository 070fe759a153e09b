import { describe, expect, it } from "vitest";
import { pendingOf } from "../../src/client/compaction.ts";
import { pendingRequest, planTurnContext } from "../../src/context/arena.ts";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import { summariseAsk, turnsToRead } from "../../src/context/compactionRead.ts";
import { ContextCompactedPayload, emptyArenaState, SummariseAsk } from "../../src/contracts/context.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { LedgerEvent, type RecordedCompactionRequest } from "../../src/contracts/ledger.ts";
import { decideLedger } from "../../src/ledgers/decide.ts";
import { applyLedgerEvent, emptyLedgers } from "../../src/ledgers/fold.ts";
import { foldTurn } from "../../src/runtime/replay.ts";
import { agentContext, episode } from "./contexts.ts";

/**
 * Explicit compaction requests (seed 003's requestCompaction): the pure parts. A pending request
 * compacts whatever the pressure and is consumed exactly once, as the log's fold says.
 */
const policy = { budget: DEFAULT_CONTEXT_BUDGET };
const request: RecordedCompactionRequest = {
  reason: "switching topics",
  instructions: "keep the user's dates",
  seq: 41,
  by: "user",
  at: "2026-11-30T00:00:00.000Z",
};
/** Turn 7 of a short conversation: normal pressure, six turns behind it. */
const context = agentContext({ episodes: [5, 6].map((turn) => episode(turn)) });
const conversation = [1, 2, 3, 4, 5, 6].map((turn) => episode(turn));

describe("a compaction request", () => {
  it("compacts the next turn at normal pressure, names the reason, and is consumed", () => {
    const turn = planTurnContext(emptyArenaState(), context, policy, { turn_id: 7, conversation, request });
    expect(turn.planned.pressure.level).toBe("normal");
    expect(turn.compacted).toMatchObject({
      reason: "requested",
      request_seq: 41,
      request_reason: "switching topics",
      instructions: "keep the user's dates",
      turns_compacted: [1, 2, 3, 4],
    });
    expect(ContextCompactedPayload.parse(turn.compacted).reason).toBe("requested");
    expect(turn.state.compaction_request_seq).toBe(41);
    expect(pendingRequest(turn.state, request)).toBeNull();
    // The next turn reads the same request: consumed, it does not compact again.
    const next = planTurnContext(turn.state, agentContext({ episodes: [episode(7)] }), policy, {
      turn_id: 8,
      conversation: [5, 6, 7].map((n) => episode(n)),
      request,
    });
    expect(next.compacted).toBeNull();
    // A later request is pending again.
    expect(pendingRequest(turn.state, { ...request, seq: 50 })?.seq).toBe(50);
  });

  it("without a request a turn at normal pressure does not compact", () => {
    const turn = planTurnContext(emptyArenaState(), context, policy, { turn_id: 7, conversation });
    expect(turn.compacted).toBeNull();
  });

  it("stays pending while there is nothing to fold in", () => {
    const turn = planTurnContext(emptyArenaState(), agentContext(), policy, { turn_id: 2, request });
    expect(turn.compacted).toBeNull();
    expect(pendingRequest(turn.state, request)).toEqual(request);
  });

  it("makes the compacting turn read the conversation whatever the pressure", () => {
    const probe = { arena: emptyArenaState(), context: agentContext(), policy };
    const reply = { episodes: [], user_facts: [], open_threads: [] };
    expect(turnsToRead(probe, reply, 7)).toEqual([]);
    expect(turnsToRead(probe, { ...reply, compaction_request: request }, 7)).toEqual([1, 2, 3, 4, 5, 6]);
    const consumed = { ...probe, arena: { ...emptyArenaState(), compaction_request_seq: 41 } };
    expect(turnsToRead(consumed, { ...reply, compaction_request: request }, 7)).toEqual([]);
  });

  it("is a ledger event folded with its stream sequence", () => {
    const state = emptyLedgers("s-arena");
    const decision = decideLedger(
      state,
      { session_id: "s-arena", op: "context.request_compaction", compaction: { reason: "switching topics" } },
      "user",
      "2026-11-30T00:00:00.000Z",
    );
    expect(LedgerEvent.parse(decision.event).kind).toBe("COMPACTION_REQUESTED");
    const folded = applyLedgerEvent(state, decision.event!, 12);
    expect(folded.compaction).toEqual({
      reason: "switching topics",
      seq: 12,
      by: "user",
      at: "2026-11-30T00:00:00.000Z",
    });
  });

  it("is pending, for the client, until a CONTEXT_COMPACTED names it; replay folds the same", () => {
    const compacted = planTurnContext(emptyArenaState(), context, policy, { turn_id: 7, conversation, request })
      .compacted!;
    const at = (kind: string, payload: unknown, seq: number) =>
      ({ kind, payload, session_id: "s-arena", turn_id: 7, seq, ts_monotonic: seq }) as unknown as EngineEvent;
    expect(pendingOf(request, [])).toEqual({ reason: "switching topics", instructions: "keep the user's dates" });
    expect(pendingOf(null, [])).toBeNull();
    const turnEvents = [
      at("TURN_STARTED", { user_input: "hi", turn_id: 7 }, 0),
      at("CONTEXT_COMPACTED", compacted, 1),
      at("TURN_COMPLETED", {}, 2),
    ];
    expect(pendingOf(request, turnEvents)).toBeNull();
    expect(pendingOf({ ...request, seq: 60 }, turnEvents)?.reason).toBe("switching topics");
    const replayed = foldTurn(
      { turns_completed: 6, last_turn_id: 6, modulators: context.modulators, stance: context.stance },
      turnEvents,
    );
    expect(replayed.context_arena?.compaction_request_seq).toBe(41);
  });

  it("asks memory's model for a summary the memory service accepts, whatever the session's budget", () => {
    const reply = { episodes: [], user_facts: [], open_threads: [], compaction_request: request };
    for (const total_tokens of [8, DEFAULT_CONTEXT_BUDGET.total_tokens, 2_000_000]) {
      const probe = {
        arena: emptyArenaState(),
        context,
        policy: { budget: { ...DEFAULT_CONTEXT_BUDGET, total_tokens } },
      };
      const ask = SummariseAsk.parse(summariseAsk(probe, reply));
      expect(ask.instructions).toBe("keep the user's dates");
      expect(ask.max_tokens).toBe(Math.min(Math.max(1, Math.floor(total_tokens / 10)), 64_000));
    }
  });
});
