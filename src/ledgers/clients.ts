import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import { checkSessionId } from "../contracts/ids.ts";
import type {
  LedgerDigest,
  LedgerReplay,
  Ledgers,
  TaskBlocker,
  TaskItem,
  TaskSpec,
  TaskState,
  TruthFact,
  TruthState,
} from "../contracts/ledger.ts";
import {
  type AgentLedgerRequest,
  type LedgerOpName,
  LedgerReply,
  type LedgerRequest,
  LedgerResults,
  type TaskBlockerInput,
  type TaskItemInput,
  type TaskItemUpdate,
  type TruthFactInput,
} from "../contracts/ledgerRequest.ts";
import type { WorkerMerge, WorkerResult, WorkerResultInput, WorkerResultsState } from "../contracts/workerResults.ts";
import { ConclaveError } from "../errors.ts";

/**
 * For whom a change is made. Who made it (`by`) is recorded by the runner
 * from the connection's role, never taken from the request: `user`, or
 * `user:<userId>` when a client of the runtime's account names the end user
 * it acts for; `tenant:<name>` on a tenant's connection (which may not name
 * one: `forbidden`); `agent:<id>` for an agent's `ctx.ledgers` (likewise
 * `invalid_request`).
 */
export interface LedgerWriteOptions {
  userId?: string;
}

/**
 * A session's truth ledger: facts held true, with their evidence. Every change
 * is an event on the session's log; reads fold the log. Errors: `not_found`
 * (no such fact), `invalid_request` (each bad field named).
 */
export interface TruthLedgerClient {
  /**
   * Records a fact, or updates the one with its id (default: derived from the
   * statement, so the same statement is the same fact): the statement, more
   * evidence (appended), the confidence; a resolved fact becomes active again.
   */
  upsertFact(sessionId: string, fact: z.input<typeof TruthFactInput>, options?: LedgerWriteOptions): Promise<TruthFact>;
  /** Marks a fact as no longer held (with why). Resolving a resolved fact changes nothing. */
  resolveFact(
    sessionId: string,
    factId: string,
    options?: LedgerWriteOptions & { resolution?: string },
  ): Promise<TruthFact>;
  /** Facts (active by default) about `text` first, then the most recently changed. */
  queryLedger(
    sessionId: string,
    query?: { text?: string; status?: "active" | "resolved" | "all"; limit?: number },
  ): Promise<TruthFact[]>;
  /** Both ledgers in short: what agents get in their context. */
  getLedgerDigest(sessionId: string): Promise<LedgerDigest>;
  /** Every fact, in the order they were first recorded. */
  getState(sessionId: string): Promise<TruthState>;
}

/**
 * A session's task ledger: the spec, the items of its plan, what blocks them.
 * Errors: `not_found` (no such item or blocker), `conflict` (an item id taken
 * by another title), `invalid_request`.
 */
export interface TaskLedgerClient {
  /** Sets (replaces) the task's spec. */
  setSpec(sessionId: string, spec: z.input<typeof TaskSpec>, options?: LedgerWriteOptions): Promise<TaskState>;
  /** Adds an item (status `todo` unless given); adding the same one again changes nothing. */
  addItem(sessionId: string, item: z.input<typeof TaskItemInput>, options?: LedgerWriteOptions): Promise<TaskItem>;
  /** Changes an item's title or status, or appends a note. */
  updateItem(sessionId: string, item: z.input<typeof TaskItemUpdate>, options?: LedgerWriteOptions): Promise<TaskItem>;
  /** Records what blocks the task (or one item, with `item_id`). */
  recordBlocker(
    sessionId: string,
    blocker: z.input<typeof TaskBlockerInput>,
    options?: LedgerWriteOptions,
  ): Promise<TaskBlocker>;
  /** Marks a blocker resolved (with how). */
  resolveBlocker(
    sessionId: string,
    blockerId: string,
    options?: LedgerWriteOptions & { resolution?: string },
  ): Promise<TaskBlocker>;
  /** The spec, items and blockers. */
  getState(sessionId: string): Promise<TaskState>;
}

/** Both ledgers at once, and their replay. */
export interface LedgersClient {
  /** Both ledgers, folded from the session's log (through the position `through_seq`). */
  state(sessionId: string): Promise<Ledgers>;
  /** Folds the session's ledger log again from its first event and compares the result with the stored projection. */
  replay(sessionId: string): Promise<LedgerReplay>;
}

/**
 * A session's worker results (seed 003's session domain): what work done outside the turns reports
 * to the session, merged into one on request. Until merged or cleared, the next turns' agents see
 * each pending result in their context (the `task_state` zone); after a merge, its values. Every
 * change is an event on the session's log. Errors: `conflict` (an id taken by another result),
 * `invalid_request` (each bad field named; `data` is at most 16 KiB as JSON).
 */
export interface WorkerResultsClient {
  /**
   * Records a worker's result (status `ok` unless given). The id defaults to one derived from its
   * content, so reporting the same result twice records it once; null when it was merged already.
   */
  record(
    sessionId: string,
    result: z.input<typeof WorkerResultInput>,
    options?: LedgerWriteOptions,
  ): Promise<WorkerResult | null>;
  /** The pending results, in the order they were recorded, and the last merge. */
  list(sessionId: string): Promise<WorkerResultsState>;
  /**
   * Merges the pending results into one (see WorkerMerge: a later worker's value wins a key, and
   * the key is named as a conflict; `error` results are named, not merged). With nothing pending,
   * changes nothing and answers the last merge (null: none).
   */
  merge(sessionId: string, options?: LedgerWriteOptions): Promise<WorkerMerge | null>;
  /** Drops the pending results; with `all`, the last merge too (seed 003's `clearState`). */
  clear(sessionId: string, options?: LedgerWriteOptions & { all?: boolean }): Promise<WorkerResultsState>;
}

/** The ledger clients over one connection. */
export interface LedgerClients {
  truth: TruthLedgerClient;
  task: TaskLedgerClient;
  ledgers: LedgersClient;
  workerResults: WorkerResultsClient;
}

/** How a ledger client's operations reach the ledgers: one request per operation, its result checked. */
type LedgerCall = <O extends LedgerOpName>(
  sessionId: string,
  op: O,
  body?: Omit<Extract<LedgerRequest, { op: O }>, "session_id" | "op"> | Record<string, unknown>,
) => Promise<z.infer<(typeof LedgerResults)[O]>>;

/**
 * The three ledger clients over one connection (requests on
 * `conclave.ledger.<session>`, answered by a runner). Changes are recorded
 * as the connection's (see {@link LedgerWriteOptions}).
 */
export function ledgerClients(nc: NatsConnection, timeoutMs: number): LedgerClients {
  return ledgerClientsOver(async (sessionId, op, body = {}) => {
    checkSessionId(sessionId);
    const request = { session_id: sessionId, op, ...body };
    const reply = await requestJson(nc, subjects.ledger(sessionId), request, LedgerReply, { timeoutMs });
    return LedgerResults[op].parse(reply.result) as z.infer<(typeof LedgerResults)[typeof op]>;
  });
}

/**
 * The ledger clients of an agent, for its `ctx.ledgers`, over its worker's
 * connection: requests on `conclave.agentledger.<session>` (the worker
 * role's alone), every change recorded as `agent:<agentId>`.
 */
export function agentLedgerClients(nc: NatsConnection, timeoutMs: number, agentId: string): LedgerClients {
  return ledgerClientsOver(async (sessionId, op, body = {}) => {
    checkSessionId(sessionId);
    const asked = { agent_id: agentId, request: { session_id: sessionId, op, ...body } } as AgentLedgerRequest;
    const reply = await requestJson(nc, subjects.agentLedger(sessionId), asked, LedgerReply, { timeoutMs });
    return LedgerResults[op].parse(reply.result) as z.infer<(typeof LedgerResults)[typeof op]>;
  });
}

function ledgerClientsOver(call: LedgerCall): LedgerClients {
  const forUser = (options?: LedgerWriteOptions) => (options?.userId !== undefined ? { user_id: options.userId } : {});
  const resolution = (options?: { resolution?: string }) =>
    options?.resolution !== undefined ? { resolution: options.resolution } : {};
  return {
    truth: {
      upsertFact: (sessionId, fact, options) => call(sessionId, "truth.upsert_fact", { fact, ...forUser(options) }),
      resolveFact: (sessionId, factId, options) =>
        call(sessionId, "truth.resolve_fact", { fact_id: factId, ...resolution(options), ...forUser(options) }),
      queryLedger: (sessionId, query = {}) => call(sessionId, "truth.query", query),
      getLedgerDigest: (sessionId) => call(sessionId, "truth.digest"),
      getState: (sessionId) => call(sessionId, "truth.state"),
    },
    task: {
      setSpec: (sessionId, spec, options) => call(sessionId, "task.set_spec", { spec, ...forUser(options) }),
      addItem: (sessionId, item, options) => call(sessionId, "task.add_item", { item, ...forUser(options) }),
      updateItem: (sessionId, item, options) => call(sessionId, "task.update_item", { item, ...forUser(options) }),
      recordBlocker: (sessionId, blocker, options) =>
        call(sessionId, "task.record_blocker", { blocker, ...forUser(options) }),
      resolveBlocker: (sessionId, blockerId, options) =>
        call(sessionId, "task.resolve_blocker", { blocker_id: blockerId, ...resolution(options), ...forUser(options) }),
      getState: (sessionId) => call(sessionId, "task.state"),
    },
    ledgers: {
      state: (sessionId) => call(sessionId, "ledgers.state"),
      replay: (sessionId) => call(sessionId, "ledgers.replay"),
    },
    workerResults: {
      record: (sessionId, result, options) => call(sessionId, "workers.record", { result, ...forUser(options) }),
      list: (sessionId) => call(sessionId, "workers.list"),
      merge: (sessionId, options) => call(sessionId, "workers.merge", forUser(options)),
      clear: (sessionId, options) =>
        call(sessionId, "workers.clear", { all: options?.all ?? false, ...forUser(options) }),
    },
  };
}

/** A client's methods with the session given: what an agent gets for its own session. */
export type BoundToSession<T> = {
  [K in keyof T]: T[K] extends (sessionId: string, ...rest: infer A) => infer R ? (...rest: A) => R : never;
};

/** The truth and task ledgers of one session, as an agent's `ctx.ledgers` offers them. */
export interface SessionLedgers {
  readonly truth: BoundToSession<TruthLedgerClient>;
  readonly task: BoundToSession<TaskLedgerClient>;
  /** The session's worker results: an agent may report one, or merge them. */
  readonly workerResults: BoundToSession<WorkerResultsClient>;
}

const bind = <T extends object>(client: T, sessionId: string): BoundToSession<T> =>
  Object.fromEntries(
    Object.entries(client).map(([name, method]) => [
      name,
      (...rest: unknown[]) => (method as (...args: unknown[]) => unknown)(sessionId, ...rest),
    ]),
  ) as BoundToSession<T>;

/** The ledgers of `sessionId` through `clients` (see {@link ledgerClients}). */
export function sessionLedgers(
  clients: Pick<LedgerClients, "truth" | "task" | "workerResults">,
  sessionId: string,
): SessionLedgers {
  return {
    truth: bind(clients.truth, sessionId),
    task: bind(clients.task, sessionId),
    workerResults: bind(clients.workerResults, sessionId),
  };
}

/** Ledgers where there is no runner to keep them (an agent run in-process): every call rejects with `unavailable`. */
export function unavailableLedgers(sessionId: string): SessionLedgers {
  return sessionLedgers(
    ledgerClientsOver(() =>
      Promise.reject(
        new ConclaveError("unavailable", "the ledgers are kept by runners: this agent runs without one (in-process)"),
      ),
    ),
    sessionId,
  );
}
