/** The session domain's worker results, pure: what a report, a merge and a clear decide, how they fold, the digest. */
import { describe, expect, it } from "vitest";
import { Ledgers } from "../../src/contracts/ledger.ts";
import { LedgerRequest } from "../../src/contracts/ledgerRequest.ts";
import type { WorkerResultInput } from "../../src/contracts/workerResults.ts";
import { decideLedger, LedgerError, type LedgerWrite } from "../../src/ledgers/decide.ts";
import { ledgerDigest } from "../../src/ledgers/digest.ts";
import { applyLedgerEvent, emptyLedgers, foldLedgers, ledgerDifferences } from "../../src/ledgers/fold.ts";

const SESSION = "s1";
let clock = 0;

/** Decides `write` against `state` and applies its event (if any), as the store does. */
function step(state: Ledgers, write: Record<string, unknown>, log: { event: unknown; seq: number }[] = []) {
  const request = LedgerRequest.parse({ session_id: SESSION, ...write }) as LedgerWrite;
  const at = new Date(Date.UTC(2026, 0, 1, 0, 0, clock++)).toISOString();
  const decision = decideLedger(state, request, "user", at);
  if (!decision.event) return { state, decision };
  const seq = (log.at(-1)?.seq ?? 0) + 2;
  log.push({ event: decision.event, seq });
  return { state: applyLedgerEvent(state, decision.event, seq), decision };
}

const record = (result: WorkerResultInput) => ({ op: "workers.record", result });

describe("worker results", () => {
  it("record a result once: the same report again stores nothing, another under its id is a conflict", () => {
    const report = { worker: "etl", summary: "loaded the March rows", data: { rows: 120 } };
    const first = step(emptyLedgers(SESSION), record(report));
    expect(first.decision.event?.kind).toBe("WORKER_RESULT_RECORDED");
    expect(first.state.workers.pending).toEqual([
      expect.objectContaining({ worker: "etl", status: "ok", data: { rows: 120 }, by: "user" }),
    ]);
    expect(step(first.state, record(report)).decision.event).toBeNull();
    const id = first.state.workers.pending[0]!.id;
    expect(() => step(first.state, record({ ...report, id, summary: "something else" }))).toThrow(LedgerError);
  });

  it("merge the pending results in order: a later value wins a key and names the conflict; errors are named", () => {
    let state = emptyLedgers(SESSION);
    state = step(state, record({ worker: "etl", summary: "loaded", data: { rows: 120, region: "eu" } })).state;
    state = step(state, record({ worker: "audit", summary: "checked", data: { rows: 118, audited: true } })).state;
    state = step(state, record({ worker: "mailer", status: "error", summary: "SMTP refused the login" })).state;
    const { state: merged, decision } = step(state, { op: "workers.merge" });
    expect(decision.event?.kind).toBe("WORKER_RESULTS_MERGED");
    expect(merged.workers.pending).toEqual([]);
    expect(merged.workers.last_merge).toMatchObject({
      results: state.workers.pending.map((result) => result.id),
      merged: { rows: 118, region: "eu", audited: true },
      conflicts: [{ key: "rows", workers: ["etl", "audit"], kept: "audit" }],
      errors: [{ worker: "mailer", summary: "SMTP refused the login" }],
    });
    // Nothing pending: a merge changes nothing and answers the last one.
    const again = step(merged, { op: "workers.merge" });
    expect(again.decision.event).toBeNull();
    expect(again.decision.result).toEqual(merged.workers.last_merge);
    // A report merged already, sent again (a retried request), records nothing.
    expect(
      step(merged, record({ worker: "etl", summary: "loaded", data: { rows: 120, region: "eu" } })).decision.event,
    ).toBeNull();
  });

  it("clear the pending results, and with all the last merge too", () => {
    let state = emptyLedgers(SESSION);
    state = step(state, record({ worker: "a", summary: "one", data: { k: 1 } })).state;
    state = step(state, { op: "workers.merge" }).state;
    state = step(state, record({ worker: "b", summary: "two" })).state;
    const cleared = step(state, { op: "workers.clear" });
    expect(cleared.state.workers.pending).toEqual([]);
    expect(cleared.state.workers.last_merge?.merged).toEqual({ k: 1 });
    const all = step(cleared.state, { op: "workers.clear", all: true });
    expect(all.decision.event).toMatchObject({
      kind: "WORKER_RESULTS_CLEARED",
      payload: { cleared: [], merge_cleared: true },
    });
    expect(all.state.workers).toEqual({ pending: [], last_merge: null });
    expect(step(all.state, { op: "workers.clear", all: true }).decision.event).toBeNull();
  });

  it("fold from the events alone to the same state, and name what differs", () => {
    const log: { event: unknown; seq: number }[] = [];
    let state = emptyLedgers(SESSION);
    state = step(state, record({ worker: "a", summary: "one", data: { k: 1 } }), log).state;
    state = step(state, record({ worker: "b", summary: "two", data: { k: 2 } }), log).state;
    state = step(state, { op: "workers.merge" }, log).state;
    state = step(state, record({ worker: "c", summary: "three" }), log).state;
    const folded = foldLedgers(SESSION, log as Parameters<typeof foldLedgers>[1]);
    expect(folded).toEqual(state);
    expect(ledgerDifferences(folded, state)).toEqual([]);
    expect(ledgerDifferences(folded, { ...state, workers: { ...state.workers, last_merge: null } })).toEqual([
      "last worker merge: differs",
    ]);
  });

  it("show agents the pending results and the last merge in the digest", () => {
    let state = emptyLedgers(SESSION);
    expect(ledgerDigest(state).workers).toBeUndefined();
    state = step(state, record({ worker: "etl", summary: "loaded the rows", data: { rows: 120 } })).state;
    expect(ledgerDigest(state).workers).toEqual({ pending: ["etl (ok): loaded the rows"], merged: [] });
    expect(ledgerDigest(state).text).toBe("Worker results not merged yet: etl (ok): loaded the rows");
    state = step(state, { op: "workers.merge" }).state;
    expect(ledgerDigest(state).text).toBe("Merged worker results: rows = 120");
  });

  it("read ledgers stored before worker results existed as having none", () => {
    const { workers: _none, ...older } = emptyLedgers(SESSION);
    expect(Ledgers.parse(older).workers).toEqual({ pending: [], last_merge: null });
  });

  it("refuse data over 16 KiB, naming it", () => {
    const data = { blob: "x".repeat(17_000) };
    const parsed = LedgerRequest.safeParse({
      session_id: SESSION,
      op: "workers.record",
      result: { worker: "w", summary: "s", data },
    });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toMatch(/at most 16384 bytes/);
  });
});
