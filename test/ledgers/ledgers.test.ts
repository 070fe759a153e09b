/** The ledgers' pure parts: what a write decides, how events fold, the digest and the query. */
import { describe, expect, it } from "vitest";
import type { LedgerEvent, Ledgers } from "../../src/contracts/ledger.ts";
import type { LedgerRequest } from "../../src/contracts/ledgerRequest.ts";
import { decideLedger, derivedId, LedgerError, type LedgerWrite } from "../../src/ledgers/decide.ts";
import { ledgerDigest, queryTruth } from "../../src/ledgers/digest.ts";
import { applyLedgerEvent, emptyLedgers, foldLedgers, ledgerDifferences } from "../../src/ledgers/fold.ts";

const SESSION = "s1";

/** A request without its session (given here): Omit over each member of the union. */
type Unsessioned<T> = T extends unknown ? Omit<T, "session_id"> : never;

/** Applies writes one after another as the store does, returning the ledgers and the events stored. */
function run(writes: Unsessioned<LedgerWrite>[], from: Ledgers = emptyLedgers(SESSION)) {
  let state = from;
  const events: { event: LedgerEvent; seq: number }[] = [];
  writes.forEach((write, index) => {
    const at = new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString();
    const { event } = decideLedger(state, { ...write, session_id: SESSION } as LedgerWrite, "user", at);
    if (!event) return;
    const seq = (events.at(-1)?.seq ?? 0) + 3; // stream sequences: increasing, not contiguous
    events.push({ event, seq });
    state = applyLedgerEvent(state, event, seq);
  });
  return { state, events };
}

const decide = (state: Ledgers, write: Unsessioned<LedgerRequest>) =>
  decideLedger(state, { ...write, session_id: SESSION } as LedgerWrite, "user", "2026-01-02T00:00:00.000Z");

describe("ledger decisions", () => {
  it("upsert the same statement into one fact, merging evidence; a new statement is a new fact", () => {
    const { state, events } = run([
      { op: "truth.upsert_fact", fact: { statement: "The sky is blue.", evidence: ["look up"] } },
      { op: "truth.upsert_fact", fact: { statement: "the sky is  blue", evidence: ["look up", "photo"] } },
      { op: "truth.upsert_fact", fact: { statement: "Grass is green" } },
    ]);
    expect(events).toHaveLength(3);
    expect(state.truth.facts).toHaveLength(2);
    expect(state.truth.facts[0]).toMatchObject({
      id: derivedId("fact", "The sky is blue."),
      statement: "the sky is  blue",
      evidence: ["look up", "photo"],
      status: "active",
      created_at: "2026-01-01T00:00:00.000Z",
      updated_at: "2026-01-01T00:00:01.000Z",
    });
  });

  it("store nothing for a write that changes nothing (a retried request, an agent run again)", () => {
    const { state } = run([
      { op: "truth.upsert_fact", fact: { statement: "A", evidence: ["e"] } },
      { op: "task.add_item", item: { title: "Do it" } },
      { op: "task.record_blocker", blocker: { message: "Waiting" } },
      { op: "task.set_spec", spec: { goal: "G", constraints: [], acceptance: [] } },
    ]);
    expect(decide(state, { op: "truth.upsert_fact", fact: { statement: "A", evidence: ["e"] } }).event).toBeNull();
    expect(decide(state, { op: "task.add_item", item: { title: "do it." } }).event).toBeNull();
    expect(decide(state, { op: "task.record_blocker", blocker: { message: "Waiting" } }).event).toBeNull();
    expect(
      decide(state, { op: "task.set_spec", spec: { goal: "G", constraints: [], acceptance: [] } }).event,
    ).toBeNull();
    const item = state.task.items[0]!;
    expect(decide(state, { op: "task.update_item", item: { id: item.id, status: "todo" } }).event).toBeNull();
  });

  it("resolve a fact and a blocker once, reactivate a fact upserted again, and refuse unknown ids", () => {
    const { state } = run([
      { op: "truth.upsert_fact", fact: { id: "f1", statement: "A" } },
      { op: "truth.resolve_fact", fact_id: "f1", resolution: "not any more" },
      { op: "task.add_item", item: { id: "i1", title: "T" } },
      { op: "task.record_blocker", blocker: { id: "b1", message: "M", item_id: "i1" } },
      { op: "task.resolve_blocker", blocker_id: "b1", resolution: "done" },
    ]);
    expect(state.truth.facts[0]).toMatchObject({ status: "resolved", resolution: "not any more" });
    expect(state.task.blockers[0]).toMatchObject({ status: "resolved", resolution: "done", item_id: "i1" });
    expect(decide(state, { op: "truth.resolve_fact", fact_id: "f1" }).event).toBeNull();
    const reactivated = decide(state, { op: "truth.upsert_fact", fact: { id: "f1", statement: "A" } });
    expect(reactivated.result).toMatchObject({ status: "active" });
    expect(reactivated.result).not.toHaveProperty("resolution");

    for (const write of [
      { op: "truth.resolve_fact", fact_id: "nope" },
      { op: "task.update_item", item: { id: "nope", status: "done" } },
      { op: "task.resolve_blocker", blocker_id: "nope" },
      { op: "task.record_blocker", blocker: { message: "M", item_id: "nope" } },
    ] as const) {
      expect(() => decide(state, write)).toThrow(LedgerError);
      expect(() => decide(state, write)).toThrow(/nope/);
    }
    expect(() => decide(state, { op: "task.add_item", item: { id: "i1", title: "Other" } })).toThrow(
      expect.objectContaining({ code: "conflict" }),
    );
  });

  it("append a note once, keeping the last 20", () => {
    const notes = Array.from({ length: 25 }, (_, index) => ({
      op: "task.update_item" as const,
      item: { id: "i1", note: `note ${index}` },
    }));
    const { state } = run([{ op: "task.add_item", item: { id: "i1", title: "T" } }, ...notes]);
    expect(state.task.items[0]?.notes).toHaveLength(20);
    expect(state.task.items[0]?.notes.at(-1)).toBe("note 24");
    expect(decide(state, { op: "task.update_item", item: { id: "i1", note: "note 24" } }).event).toBeNull();
  });
});

describe("folding the ledgers", () => {
  it("gives the same ledgers from the events alone, and names what differs from another fold", () => {
    const { state, events } = run([
      { op: "task.set_spec", spec: { goal: "G", constraints: ["c"], acceptance: [] } },
      { op: "task.add_item", item: { id: "i1", title: "T" } },
      { op: "task.update_item", item: { id: "i1", status: "done" } },
      { op: "truth.upsert_fact", fact: { id: "f1", statement: "A" } },
    ]);
    const folded = foldLedgers(SESSION, events);
    expect(folded).toEqual(state);
    expect(folded.through_seq).toBe(events.at(-1)?.seq);
    expect(folded.events).toBe(4);
    expect(ledgerDifferences(folded, state)).toEqual([]);

    const fewer = foldLedgers(SESSION, events.slice(0, 2));
    expect(ledgerDifferences(folded, fewer)).toEqual([
      `through_seq: ${folded.through_seq} ≠ ${fewer.through_seq}`,
      "events: 4 ≠ 2",
      "fact f1: only in the rebuilt ledgers",
      "item i1: differs",
    ]);
  });
});

describe("the digest and the query", () => {
  const { state } = run([
    { op: "task.set_spec", spec: { goal: "Ship v2", constraints: [], acceptance: [] } },
    { op: "task.add_item", item: { id: "a", title: "Tests" } },
    { op: "task.add_item", item: { id: "b", title: "Docs", status: "done" } },
    { op: "task.add_item", item: { id: "c", title: "Deploy", status: "doing" } },
    { op: "task.record_blocker", blocker: { message: "No key", item_id: "c" } },
    { op: "truth.upsert_fact", fact: { id: "old", statement: "The database is Postgres 14" } },
    { op: "truth.upsert_fact", fact: { id: "new", statement: "Deploys run on Fridays" } },
    { op: "truth.upsert_fact", fact: { id: "gone", statement: "The cache is Redis" } },
    { op: "truth.resolve_fact", fact_id: "gone" },
  ]);

  it("shows active facts newest first, open items and blockers, and says it as text", () => {
    const digest = ledgerDigest(state);
    expect(digest.facts).toEqual(["Deploys run on Fridays", "The database is Postgres 14"]);
    expect(digest.task).toEqual({
      goal: "Ship v2",
      open_items: ["[todo] Tests", "[doing] Deploy"],
      open_blockers: ["No key"],
    });
    expect(digest.counts).toEqual({
      facts_active: 2,
      facts_resolved: 1,
      items_open: 2,
      items_done: 1,
      blockers_open: 1,
    });
    expect(digest.text.split("\n")).toEqual([
      "Known facts: Deploys run on Fridays; The database is Postgres 14",
      "Task: Ship v2",
      "Open items: [todo] Tests; [doing] Deploy",
      "Blockers: No key",
    ]);
    expect(ledgerDigest(emptyLedgers(SESSION)).text).toBe("");
  });

  it("finds facts about a text first, by status", () => {
    expect(queryTruth(state, { text: "which database?", status: "active", limit: 10 }).map((f) => f.id)).toEqual([
      "old",
    ]);
    expect(queryTruth(state, { status: "all", limit: 10 }).map((f) => f.id)).toEqual(["gone", "new", "old"]);
    expect(queryTruth(state, { status: "resolved", limit: 10 }).map((f) => f.id)).toEqual(["gone"]);
    expect(queryTruth(state, { status: "active", limit: 1 }).map((f) => f.id)).toEqual(["new"]);
  });
});
