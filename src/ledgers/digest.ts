import type { LedgerDigest, Ledgers, TruthFact } from "../contracts/ledger.ts";
import { topicsOf } from "../memory/learn/topics.ts";
import { pendingLine } from "./workerResults.ts";

/** Most entries of each list a digest shows. */
const DIGEST_LIMIT = 10;

/** Most recently changed first; of two changed in the same millisecond, the one recorded later. */
const newestFirst = <T extends { updated_at: string }>(list: readonly T[]): T[] =>
  list
    .map((entity, index) => ({ entity, index }))
    .sort((a, b) => b.entity.updated_at.localeCompare(a.entity.updated_at) || b.index - a.index)
    .map(({ entity }) => entity);

/** A short view of both ledgers (see {@link LedgerDigest}): what an agent's context gets. */
export function ledgerDigest(ledgers: Ledgers): LedgerDigest {
  const active = newestFirst(ledgers.truth.facts.filter((fact) => fact.status === "active"));
  const open = ledgers.task.items.filter((item) => item.status === "todo" || item.status === "doing");
  const blockers = ledgers.task.blockers.filter((blocker) => blocker.status === "open");
  const goal = ledgers.task.spec?.goal;
  const pending = ledgers.workers.pending;
  const merged = Object.entries(ledgers.workers.last_merge?.merged ?? {})
    .slice(0, 2 * DIGEST_LIMIT)
    .map(([key, value]) => `${key} = ${JSON.stringify(value)}`.slice(0, 200));
  const workers =
    pending.length > 0 || merged.length > 0
      ? { workers: { pending: pending.slice(-DIGEST_LIMIT).map(pendingLine), merged } }
      : {};
  const digest: Omit<LedgerDigest, "text"> = {
    facts: active.slice(0, DIGEST_LIMIT).map((fact) => fact.statement),
    task: {
      ...(goal !== undefined ? { goal } : {}),
      open_items: open.slice(0, DIGEST_LIMIT).map((item) => `[${item.status}] ${item.title}`),
      open_blockers: blockers.slice(0, DIGEST_LIMIT).map((blocker) => blocker.message),
    },
    counts: {
      facts_active: active.length,
      facts_resolved: ledgers.truth.facts.length - active.length,
      items_open: open.length,
      items_done: ledgers.task.items.filter((item) => item.status === "done").length,
      blockers_open: blockers.length,
    },
    ...workers,
  };
  const lines = [
    ...(digest.facts.length > 0 ? [`Known facts: ${digest.facts.join("; ")}`] : []),
    ...(goal !== undefined ? [`Task: ${goal}`] : []),
    ...(digest.task.open_items.length > 0 ? [`Open items: ${digest.task.open_items.join("; ")}`] : []),
    ...(digest.task.open_blockers.length > 0 ? [`Blockers: ${digest.task.open_blockers.join("; ")}`] : []),
    ...(digest.workers && digest.workers.pending.length > 0
      ? [`Worker results not merged yet: ${digest.workers.pending.join("; ")}`]
      : []),
    ...(digest.workers && digest.workers.merged.length > 0
      ? [`Merged worker results: ${digest.workers.merged.join("; ")}`]
      : []),
  ];
  return { ...digest, text: lines.join("\n") };
}

/** True when the digest has nothing to say (both ledgers empty, or all settled). */
export const isEmptyDigest = (digest: LedgerDigest): boolean => digest.text === "";

/**
 * The truth ledger's facts with `status` (active, resolved or all): about
 * `text` first when given (how many of its topics a fact shares), then the
 * most recently changed; at most `limit`. With `text`, only facts sharing a
 * topic with it.
 */
export function queryTruth(
  ledgers: Ledgers,
  query: { text?: string | undefined; status: "active" | "resolved" | "all"; limit: number },
): TruthFact[] {
  const facts = newestFirst(
    ledgers.truth.facts.filter((fact) => query.status === "all" || fact.status === query.status),
  );
  const text = query.text?.trim();
  if (!text) return facts.slice(0, query.limit);
  const wanted = new Set(topicsOf(text));
  const scored = facts
    .map((fact, order) => ({
      fact,
      order,
      overlap: topicsOf(`${fact.statement} ${fact.evidence.join(" ")}`).filter((topic) => wanted.has(topic)).length,
    }))
    .filter((entry) => entry.overlap > 0);
  scored.sort((a, b) => b.overlap - a.overlap || a.order - b.order);
  return scored.slice(0, query.limit).map((entry) => entry.fact);
}
