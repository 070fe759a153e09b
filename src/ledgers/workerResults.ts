import { createHash } from "node:crypto";
import type { Ledgers } from "../contracts/ledger.ts";
import type { WorkerConflict, WorkerMerge, WorkerResult, WorkerResultInput } from "../contracts/workerResults.ts";

/**
 * The session domain's worker results, decided and merged: pure, like the
 * rest of the ledgers (decide.ts calls these; fold.ts applies their events).
 */

/** A worker-results write the ledgers refuse: an id taken by another result. */
export interface WorkerResultsRefusal {
  refused: string;
}

const idOf = (prefix: string, text: string) =>
  `${prefix}-${createHash("sha256").update(text).digest("hex").slice(0, 12)}`;

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The result to record for `input` (null when it is already recorded, pending or merged last:
 * a retried report records nothing), or a refusal when its id names another result.
 */
export function resultToRecord(
  state: Ledgers,
  input: WorkerResultInput,
  by: string,
  at: string,
): { result: WorkerResult | null; existing?: WorkerResult } | WorkerResultsRefusal {
  const status = input.status ?? "ok";
  const id = input.id ?? idOf("result", JSON.stringify([input.worker, status, input.summary, input.data ?? null]));
  const existing = state.workers.pending.find((result) => result.id === id);
  if (existing) {
    const sameResult =
      existing.worker === input.worker &&
      existing.status === status &&
      existing.summary === input.summary &&
      same(existing.data, input.data);
    return sameResult ? { result: null, existing } : { refused: `worker result ${id} exists with other content` };
  }
  if (state.workers.last_merge?.results.includes(id)) return { result: null };
  return {
    result: {
      id,
      worker: input.worker,
      status,
      summary: input.summary,
      ...(input.data !== undefined ? { data: input.data } : {}),
      by,
      recorded_at: at,
    },
  };
}

/**
 * The pending results merged into one, in the order they were recorded: each `ok` result's data
 * key by key, a later worker's value winning over an earlier one's and the key named as a conflict
 * when their values differ; `error` results are named, not merged. Null when nothing is pending.
 */
export function mergeResults(pending: readonly WorkerResult[], by: string, at: string): WorkerMerge | null {
  if (pending.length === 0) return null;
  const merged: Record<string, unknown> = {};
  const setBy = new Map<string, string[]>();
  const differing = new Set<string>();
  for (const result of pending) {
    if (result.status !== "ok") continue;
    for (const [key, value] of Object.entries(result.data ?? {})) {
      const workers = setBy.get(key);
      if (workers === undefined) setBy.set(key, [result.worker]);
      else {
        if (!same(merged[key], value)) differing.add(key);
        if (!workers.includes(result.worker)) workers.push(result.worker);
      }
      merged[key] = value;
    }
  }
  const conflicts: WorkerConflict[] = [...differing].map((key) => {
    const workers = setBy.get(key) ?? [];
    return { key, workers, kept: workers.at(-1) ?? "" };
  });
  const ids = pending.map((result) => result.id);
  return {
    id: idOf("merge", ids.join(",")),
    results: ids,
    merged,
    conflicts,
    errors: pending
      .filter((result) => result.status === "error")
      .map((result) => ({ worker: result.worker, summary: result.summary })),
    by,
    at,
  };
}

/** How a pending result is shown to agents: `worker (status): summary`. */
export const pendingLine = (result: WorkerResult): string => `${result.worker} (${result.status}): ${result.summary}`;
