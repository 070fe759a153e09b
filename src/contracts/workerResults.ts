import { z } from "zod";

/**
 * The session domain's worker results (seed 003's `runtime.session.*`): what
 * work done outside a turn (a background job, a delegate, a person, another
 * agent) reports to a session, merged into one result on request. Stored as
 * ledger events on the session's log, folded with the truth and task ledgers,
 * and shown to the next turns' agents until merged or cleared.
 */

/** Ids of results and merges, as the ledgers' (see LedgerItemId in ledger.ts, which this mirrors). */
const ResultId = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,64}$/, "an id is 1-64 characters of A-Z, a-z, 0-9, '_', '.', ':' or '-'");
const Text = (max: number) => z.string().trim().min(1).max(max);

/** Most bytes of a result's `data`, as JSON. */
export const WORKER_DATA_MAX_BYTES = 16_384;

/** A result's structured output: keys merged one by one (`workers.merge`). */
export const WorkerData = z
  .record(
    z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, "a data key is 1-64 characters of A-Z, a-z, 0-9, _ . : -"),
    z.unknown(),
  )
  .refine((data) => Buffer.byteLength(JSON.stringify(data)) <= WORKER_DATA_MAX_BYTES, {
    error: `data is at most ${WORKER_DATA_MAX_BYTES} bytes as JSON`,
  });

/** One worker's result, pending until merged or cleared. */
export const WorkerResult = z.object({
  id: ResultId,
  /** Who did the work (a job's name, a delegate's id): named in merges and conflicts. */
  worker: Text(128),
  status: z.enum(["ok", "error"]),
  /** What came of it, one or two sentences: what agents are shown. */
  summary: Text(2_000),
  data: WorkerData.optional(),
  /** Who reported it (the ledgers' actor: `user`, `user:<id>`, `tenant:<name>`, `agent:<id>`). */
  by: z.string().min(1).max(128),
  recorded_at: z.string().max(40),
});
export type WorkerResult = z.infer<typeof WorkerResult>;

/** A key two or more workers set to different values: the last one recorded wins, and this names them all. */
export const WorkerConflict = z.object({
  key: z.string(),
  /** The workers that set it, in the order their results were recorded. */
  workers: z.array(z.string()),
  /** The worker whose value the merge kept (the last). */
  kept: z.string(),
});
export type WorkerConflict = z.infer<typeof WorkerConflict>;

/** One merge of the pending results into one. */
export const WorkerMerge = z.object({
  id: ResultId,
  /** The results merged, in the order they were recorded. */
  results: z.array(ResultId),
  /** The `ok` results' data, key by key. */
  merged: z.record(z.string(), z.unknown()),
  conflicts: z.array(WorkerConflict),
  /** The `error` results: not merged, named here. */
  errors: z.array(z.object({ worker: z.string(), summary: z.string() })),
  by: z.string().min(1).max(128),
  at: z.string().max(40),
});
export type WorkerMerge = z.infer<typeof WorkerMerge>;

/** The session domain's state: the pending results and the last merge. */
export const WorkerResultsState = z.object({
  pending: z.array(WorkerResult),
  last_merge: WorkerMerge.nullable(),
});
export type WorkerResultsState = z.infer<typeof WorkerResultsState>;

/** The state of a session that never had a worker result (and of ledgers stored before 0.3.0). */
export const emptyWorkerResults = (): WorkerResultsState => ({ pending: [], last_merge: null });

/** What `workerResults.record` is given. */
export const WorkerResultInput = z.object({
  /** Default: derived from the worker and the summary, so reporting the same result twice records it once. */
  id: ResultId.optional(),
  worker: Text(128),
  /** Default `ok`. */
  status: z.enum(["ok", "error"]).optional(),
  summary: Text(2_000),
  data: WorkerData.optional(),
});
export type WorkerResultInput = z.infer<typeof WorkerResultInput>;

/** Each worker-results event kind and its payload. */
export const WorkerResultEventPayloads = {
  WORKER_RESULT_RECORDED: z.object({ result: WorkerResult }),
  WORKER_RESULTS_MERGED: z.object({ merge: WorkerMerge }),
  /** `cleared`: the pending results dropped; `merge_cleared`: the last merge too (`all`). */
  WORKER_RESULTS_CLEARED: z.object({ cleared: z.array(ResultId), merge_cleared: z.boolean() }),
} as const;
