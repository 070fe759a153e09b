/**
 * Supplemental injection (seed 003's planSupplementalInjection / commitSupplementalInjection): the
 * pure parts. A plan says how much of a text the `supplemental` zone takes and why not all; a commit
 * is a ledger event, idempotent per scope; the next turn's plan puts the pending supplements in the
 * zone, cites them, and consumes them once, as a replay of the log folds it.
 */
import { describe, expect, it } from "vitest";
import { arenaPressure, planTurnContext } from "../../src/context/arena.ts";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import { turnsToRead } from "../../src/context/compactionRead.ts";
import { committedOf, pendingSupplements, planSupplement, withSupplements } from "../../src/context/supplemental.ts";
import { tokenizerFor } from "../../src/context/tokenizer.ts";
import { ZONE_TITLES } from "../../src/context/zones.ts";
import { ContextPlannedPayload, emptyArenaState } from "../../src/contracts/context.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { LedgerEvent } from "../../src/contracts/ledger.ts";
import type { RecordedSupplement } from "../../src/contracts/supplement.ts";
import { decideLedger } from "../../src/ledgers/decide.ts";
import { applyLedgerEvent, emptyLedgers } from "../../src/ledgers/fold.ts";
import { foldTurn } from "../../src/runtime/replay.ts";
import { agentContext, episode } from "./contexts.ts";

/** A budget of 2,000 tokens: the supplemental zone's cap is 200. */
const small = { budget: { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 2_000 } };
const policy = { budget: DEFAULT_CONTEXT_BUDGET };
const tokenizer = tokenizerFor(undefined);
const longText = Array.from({ length: 80 }, (_, index) => `Release note ${index}: the parser accepts tabs.`).join(" ");

const recorded = (seq: number, text: string, scope?: string): RecordedSupplement => {
  const planned = committedOf(planSupplement(text, policy, { scope }))!;
  return { ...planned, seq, by: "user", at: "2026-11-30T00:00:00.000Z" };
};

describe("a supplement's plan", () => {
  it("accepts a short text whole", () => {
    const plan = planSupplement("The user's account is on the Pro plan.", small, { scope: "billing" });
    expect(plan).toMatchObject({
      scope: "billing",
      outcome: "accepted",
      text: "The user's account is on the Pro plan.",
    });
    expect(plan.tokens_accepted).toBe(plan.tokens_asked);
    expect(plan.reason).toBeUndefined();
  });

  it("reports truncation against a small budget: the zone's cap, the tokens accepted, the text cut", () => {
    const plan = planSupplement(longText, small);
    expect(plan.outcome).toBe("truncated");
    expect(plan.tokens_asked).toBe(tokenizer.count(longText));
    expect(plan.room_tokens).toBeLessThan(200);
    expect(plan.tokens_accepted).toBeLessThanOrEqual(plan.room_tokens);
    expect(plan.tokens_accepted).toBeGreaterThan(plan.room_tokens - 10);
    expect(plan.reason).toMatch(
      /^\d+ tokens asked; the supplemental zone has room for \d+ tokens \(its cap, 0\.1 of the 2000-token budget\)$/,
    );
    expect(plan.text.startsWith("Release note 0: the parser accepts tabs.")).toBe(true);
    expect(plan.text.endsWith(" […truncated]")).toBe(true);
    // The default budget's zone takes the whole of it.
    expect(planSupplement(longText, policy).outcome).toBe("accepted");
  });

  it("leaves what the rest of the context takes; drops the text when nothing is left", () => {
    const squeezed = planSupplement(longText, small, { usage_tokens: 1_850 });
    expect(squeezed.outcome).toBe("truncated");
    expect(squeezed.room_tokens).toBeLessThan(150);
    expect(squeezed.reason).toContain("the budget leaves");
    // Past the critical ratio the budget is the compact ratio's: 1,600 tokens, all taken.
    const full = planSupplement(longText, small, { usage_tokens: 1_950 });
    expect(full).toMatchObject({ outcome: "dropped", tokens_accepted: 0, room_tokens: 0, text: "" });
    expect(full.reason).toMatch(/^no room: the budget leaves 0 tokens/);
    expect(committedOf(full)).toBeNull();
  });

  it("leaves the supplements pending their lines of the zone", () => {
    const alone = planSupplement(longText, small);
    const pending = [recorded(4, "Prefer metric units."), recorded(6, "The parcel arrives Friday.")];
    const after = planSupplement(longText, small, { pending });
    expect(after.pending_tokens).toBe(
      tokenizer.count("- Prefer metric units.\n") + tokenizer.count("- The parcel arrives Friday.\n"),
    );
    expect(after.room_tokens).toBe(alone.room_tokens - after.pending_tokens!);
    expect(after.reason).toContain(`less ${after.pending_tokens} of 2 supplement(s) pending`);
    expect(alone.pending_tokens).toBe(0);
  });

  it("cuts a commit to its tokens, and refuses more tokens than the room, with one line", () => {
    const cut = planSupplement(longText, policy, { tokens: 40 });
    expect(cut.outcome).toBe("truncated");
    expect(cut.tokens_accepted).toBeLessThanOrEqual(40);
    expect(cut.reason).toContain("the commit allows 40 tokens");
    expect(committedOf(cut)).toMatchObject({ tokens: cut.tokens_accepted, truncated: true });
    expect(() => planSupplement(longText, small, { tokens: 5_000 })).toThrow(
      /^the commit asks for 5000 tokens; the supplemental zone has room for \d+ tokens .*: plan it first and commit at most \d+$/,
    );
  });
});

describe("a committed supplement", () => {
  it("is a ledger event, idempotent per scope, folded with its stream sequence", () => {
    const state = emptyLedgers("s-arena");
    const planned = committedOf(planSupplement("Prefer metric units.", policy, { scope: "units" }))!;
    const request = {
      session_id: "s-arena",
      op: "context.commit_supplement" as const,
      supplement: { text: "Prefer metric units.", scope: "units" },
      planned,
    };
    const first = decideLedger(state, request, "user", "2026-11-30T00:00:00.000Z");
    expect(LedgerEvent.parse(first.event).kind).toBe("SUPPLEMENT_COMMITTED");
    expect(first.result).toMatchObject({ scope: "units", text: "Prefer metric units.", duplicate: false });
    const folded = applyLedgerEvent(state, first.event!, 12);
    expect(folded.supplements).toEqual({
      recorded: [{ ...planned, seq: 12, by: "user", at: expect.any(String) }],
      scopes: ["units"],
    });
    // The same scope again: nothing stored, the first commit answered.
    const again = decideLedger(
      folded,
      { ...request, planned: { ...planned, text: "Prefer imperial units." } },
      "user",
      "2026-11-30T00:01:00.000Z",
    );
    expect(again.event).toBeNull();
    expect(again.result).toMatchObject({ text: "Prefer metric units.", duplicate: true });
    // Without a scope, each commit is a new one.
    const { scope: _scope, ...unscoped } = planned;
    expect(decideLedger(folded, { ...request, planned: unscoped }, "user", "x").event?.kind).toBe(
      "SUPPLEMENT_COMMITTED",
    );
  });

  it("goes into the next turn's supplemental zone, is cited, and is consumed once", () => {
    const supplements = [
      recorded(7, "The user's order #812 shipped today.", "order-812"),
      recorded(9, "Prefer metric units."),
    ];
    const turn = planTurnContext(emptyArenaState(), agentContext(), policy, { turn_id: 3, supplements });
    expect(turn.planned.zones.supplemental.kept).toEqual(["supplement:7", "supplement:9"]);
    expect(turn.planned.supplemental).toEqual([
      {
        seq: 7,
        scope: "order-812",
        tokens_committed: supplements[0]!.tokens,
        tokens_accepted: expect.any(Number),
        outcome: "kept",
      },
      { seq: 9, tokens_committed: supplements[1]!.tokens, tokens_accepted: expect.any(Number), outcome: "kept" },
    ]);
    expect(ContextPlannedPayload.parse(turn.planned).supplemental).toHaveLength(2);
    expect(turn.plan.text).toContain(
      `## ${ZONE_TITLES.supplemental}\n- The user's order #812 shipped today.\n- Prefer metric units.`,
    );
    expect(turn.context.supplemental?.map((supplement) => supplement.text)).toEqual([
      "The user's order #812 shipped today.",
      "Prefer metric units.",
    ]);
    expect(turn.state.supplement_seq).toBe(9);
    expect(pendingSupplements(turn.state, supplements)).toEqual([]);

    // The next turn reads the same records: consumed, nothing goes in, nothing is cited.
    const next = planTurnContext(turn.state, agentContext(), policy, { turn_id: 4, supplements });
    expect(next.planned.zones.supplemental.kept).toEqual([]);
    expect(next.planned.supplemental).toBeUndefined();
    expect(next.context.supplemental).toBeUndefined();
    expect(next.plan.text).not.toContain("order #812");
    // One committed later is pending again.
    const later = [...supplements, recorded(11, "The parcel arrives Friday.")];
    const third = planTurnContext(next.state, agentContext(), policy, { turn_id: 5, supplements: later });
    expect(third.planned.zones.supplemental.kept).toEqual(["supplement:11"]);
  });

  it("is folded as consumed by a replay of the turn's CONTEXT_PLANNED", () => {
    const supplements = [recorded(5, "Prefer metric units.")];
    const turn = planTurnContext(emptyArenaState(), agentContext(), policy, { turn_id: 2, supplements });
    const at = (kind: string, payload: unknown, seq: number) =>
      ({ kind, payload, session_id: "s-arena", turn_id: 2, seq, ts_monotonic: seq }) as unknown as EngineEvent;
    const replayed = foldTurn(
      { turns_completed: 1, last_turn_id: 1, modulators: agentContext().modulators, stance: agentContext().stance },
      [
        at("TURN_STARTED", { user_input: "hi", turn_id: 2 }, 0),
        at("CONTEXT_PLANNED", turn.planned, 1),
        at("TURN_COMPLETED", {}, 2),
      ],
    );
    expect(replayed.context_arena?.supplement_seq).toBe(5);
    expect(replayed.context_arena).toEqual(turn.state);
  });

  it("presses on the turn's compaction probe as on its plan: the conversation is read when it tips the pressure", () => {
    const supplements = [{ ...recorded(3, longText), seq: 3 }];
    const context = agentContext({ episodes: [4, 5, 6, 7, 8].map((turn) => episode(turn, 120)) });
    const reply = { episodes: context.episodes, user_facts: [], open_threads: [] };
    const probe = { arena: emptyArenaState(), context: agentContext(), policy: small };
    // Without the supplement the context is below the compact ratio; with it (cut to the zone's cap), above.
    expect(arenaPressure(probe.arena, context, small).level).toBe("normal");
    expect(arenaPressure(probe.arena, withSupplements(context, supplements), small).level).not.toBe("normal");
    expect(turnsToRead(probe, reply, 9)).toEqual([]);
    expect(turnsToRead(probe, { ...reply, supplements }, 9)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // Consumed already: it presses no more.
    expect(
      turnsToRead({ ...probe, arena: { ...emptyArenaState(), supplement_seq: 3 } }, { ...reply, supplements }, 9),
    ).toEqual([]);
  });
});
