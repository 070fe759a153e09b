import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { type BusAccess, busOptions, connectBus } from "../bus/connection.ts";
import { isStreamNotFound } from "../bus/errors.ts";
import { requestJson } from "../bus/request.ts";
import { buckets, subjects } from "../bus/subjects.ts";
import type { EraseRecord } from "../contracts/erase.ts";
import type { EngineEvent } from "../contracts/events.ts";
import type { ForkRecord } from "../contracts/fork.ts";
import { checkSessionId, checkTurnId } from "../contracts/ids.ts";
import { type MemoryItem, MemorySearchReply } from "../contracts/memory.ts";
import type { JsonObject } from "../contracts/recipeRun.ts";
import { SkillsRefreshReply } from "../contracts/skill.ts";
import { RollbackReply } from "../contracts/tool.ts";
import type { SimulationTrace } from "../contracts/trace.ts";
import { CancelReply, type TurnAck } from "../contracts/turn.ts";
import type { TurnStatusRecord } from "../contracts/wal.ts";
import type { WorkingMemoryRecord } from "../contracts/workingMemory.ts";
import { type PriceTable, priceTableFromEnv, readPriceTable } from "../cost/prices.ts";
import { type CostSummary, summarizeCost } from "../cost/summary.ts";
import { ConclaveError, InvalidRequestError } from "../errors.ts";
import type { RecipeRunResult } from "../eventlog/followRun.ts";
import { TurnStatusStore } from "../eventlog/turnStatusStore.ts";
import {
  type LedgersClient,
  ledgerClients,
  type TaskLedgerClient,
  type TruthLedgerClient,
  type WorkerResultsClient,
} from "../ledgers/clients.ts";
import { replicasOf } from "../nats/replicas.ts";
import { simulationTrace } from "../recipes/trace.ts";
import { readLoggedMessages } from "../verify/logReader.ts";
import { VERIFY_LEVELS, type VerifyLevel, type VerifyReport, verifySession } from "../verify/verify.ts";
import { type ApprovalOptions, answerApproval, listApprovals, type PendingApproval } from "./approvals.ts";
import {
  type CompactionRequestOptions,
  type PendingCompaction,
  pendingCompaction,
  requestCompaction,
} from "./compaction.ts";
import { type EraseOptions, eraseSession } from "./erase.ts";
import { type ForkOptions, forkSession } from "./fork.ts";
import { type KnowledgeClient, knowledgeClient } from "./knowledge.ts";
import { type MemoryInsightsClient, memoryInsightsClient } from "./memoryInsights.ts";
import { type ResumeOptions, type RunOptions, resumeRun, runRecipe } from "./recipeRun.ts";
import { type SchedulesClient, schedulesClient } from "./schedules.ts";
import { type EventsOptions, readSessionEvents, type SessionEvent } from "./sessionEvents.ts";
import { type SkillsClient, sessionSkillsLedger, skillsClient } from "./skills.ts";
import { type ContextClient, contextClient } from "./supplement.ts";
import { type TapeClient, tapeClient } from "./tape.ts";
import { type SubmitOptions, streamTurn, type TurnStream } from "./turnStream.ts";
import { readSessionWorkingMemory } from "./workingMemory.ts";

/**
 * How to reach Conclave: the servers, TLS and login of the `client` role (as
 * `startRunner` and `startWorker` take them), or a connection. Every field has
 * a default: from CONCLAVE_NATS_* (or CONCLAVE_NATS_CLIENT_*), else the local
 * development server and users.
 */
export interface ConnectOptions extends BusAccess {
  /** An existing connection to use; the client then leaves it open on `close()`. */
  nc?: NatsConnection;
  /** The connection's name, shown by the server's monitoring. */
  name?: string;
  /** Deadline of each request (submit, cancel), in ms. Default 5 000. */
  requestTimeoutMs?: number;
}

/** Where a turn stands: pending → inflight → done | failed | expired (done includes Cancelled, in `outcome`). */
export type TurnStatusView = TurnStatusRecord;

/**
 * The answer to a cancellation: `status` is `cancelling` (the turn was pending
 * or running and ends Cancelled) or `finished` (it had ended, with `outcome`).
 */
export interface CancelResult {
  session_id: string;
  turn_id: number;
  status: "cancelling" | "finished";
  outcome?: string;
}

/** What `cost` prices with. */
export interface CostOptions {
  /** A price table, or the path of a JSON/YAML price file. Default: the file CONCLAVE_PRICES names, else none (tokens only). */
  prices?: PriceTable | string;
  /** The model of each actor (`agent:<id>` or bare agent id), when you know it: it wins over the table's `actors`. */
  models?: Readonly<Record<string, string>>;
}

/**
 * A connection to Conclave, for submitting turns and reading what happened.
 * A session id or turn id that cannot be one is refused with
 * InvalidRequestError (code `invalid_request`) before anything is sent.
 */
export interface ConclaveClient extends TapeClient {
  /** The NATS connection underneath. */
  readonly nc: NatsConnection;
  /** Submits a user turn; see TurnStream. */
  submit(sessionId: string, text: string, options?: SubmitOptions): TurnStream;
  /** A session's stored events in log order, from a position, then live ones with `follow`. */
  events(sessionId: string, options?: EventsOptions): AsyncIterable<SessionEvent>;
  /**
   * Where one turn stands; null when the session has no such turn. The status
   * is written just after the turn's TURN_COMPLETED is stored, so read right
   * after `result` it may still say `inflight` for a moment.
   */
  status(sessionId: string, turnId: number): Promise<TurnStatusView | null>;
  /** Where each turn of a session stands, in turn order. */
  turns(sessionId: string): Promise<TurnStatusView[]>;
  /**
   * The session's working memory (docs/knowledge.md, "Working memory"), from its event log: its
   * version, content, and the turn, agent and time of its last update; version 0 and `{}` while
   * no agent has changed it.
   */
  workingMemory(sessionId: string): Promise<WorkingMemoryRecord>;
  /**
   * Cancels a turn wherever it runs: it ends with outcome `Cancelled`
   * (status `cancelling`), or had already ended (status `finished`).
   * Rejects with a `not_found` error for a turn the session does not have.
   */
  cancel(sessionId: string, turnId: number, reason?: string): Promise<CancelResult>;
  /**
   * Runs a recipe document (graph or workflow shape, as parsed JSON/YAML) as a
   * turn of the session, and follows it until it completes or suspends at a
   * human node. A document or inputs the runner refuses reject with
   * `invalid_request`, each issue naming its path.
   */
  run(sessionId: string, document: JsonObject, options?: RunOptions): Promise<RecipeRunResult & { ack: TurnAck }>;
  /**
   * Answers a suspended run's human node (as `userId`, in `role`), then
   * follows the run until it completes or suspends again. Rejects with
   * `conflict` when the run is not waiting, `forbidden` for the wrong role.
   */
  resume(sessionId: string, turnId: number, options: ResumeOptions): Promise<RecipeRunResult>;
  /**
   * The SimulationTrace of a recipe run, built from its stored events (so
   * it is there after restarts). Rejects with `not_found` for a turn that is
   * no recipe run (or does not exist).
   */
  trace(sessionId: string, turnId: number): Promise<SimulationTrace>;
  /**
   * Undoes a finished turn's executed write tool calls, last first, through
   * each tool's `rollback`; the log records each (TOOL_CALL_ROLLED_BACK).
   * Rejects with `conflict` while the turn runs or waits.
   */
  rollback(sessionId: string, turnId: number): Promise<RollbackReply>;
  /** A session's memory: search, and its insights (docs/memory.md, "Insights"). */
  readonly memory: MemoryInsightsClient & {
    /**
     * What the session's memory holds about `query` (user facts, threads open or
     * closed, episodes), best first: topic overlap, then recurrence, then recency.
     * With `tool`, only the episodes whose turn invoked that tool (`query` may be
     * empty); an episode's item names its turn's tools (`tools`).
     */
    search(sessionId: string, query: string, options?: { limit?: number; tool?: string }): Promise<MemoryItem[]>;
  };
  /** A session's truth ledger (facts with evidence), stored as events on its log. */
  readonly truth: TruthLedgerClient;
  /** A session's task ledger (spec, items, blockers), stored as events on its log. */
  readonly task: TaskLedgerClient;
  /** Both ledgers at once, and their replay from the log. */
  readonly ledgers: LedgersClient;
  /** A session's worker results: what work outside the turns reported, merged on request (docs/memory.md). */
  readonly workerResults: WorkerResultsClient;
  /** Schedules: turns or recipe runs fired at a time, at an interval or on a cron expression (docs/schedules.md). */
  readonly schedules: SchedulesClient;
  /** Knowledge collections: documents chunked, embedded and searched by meaning, with citations (docs/knowledge.md). */
  readonly knowledge: KnowledgeClient;
  /** The session's context arena: supplemental injection, planned and committed (docs/context.md). */
  readonly context: ContextClient;
  /** A session's skills, from its log: the active ones, their recorded outputs, what a skill consumes (docs/skills.md). */
  readonly skills: SkillsClient;
  /** Tool calls waiting for a person's approval (of one session, or all), oldest first. */
  approvals(sessionId?: string): Promise<PendingApproval[]>;
  /**
   * Approves the tool call a run waits for (`id` is `<session>/<turn>`), then
   * follows the run until it completes or suspends again. Rejects with
   * `forbidden` for the wrong role, `conflict` when nothing waits.
   */
  approve(id: string, options: ApprovalOptions): Promise<RecipeRunResult>;
  /** Denies it: the call is refused (`denied`) and the run goes on without it. */
  deny(id: string, options: ApprovalOptions): Promise<RecipeRunResult>;
  /**
   * Erases everything stored of the session (docs/operations.md, "Data
   * lifecycle"): its turns in flight are cancelled and waited for, then its
   * events, statuses, memory, ledgers, blackboards… are removed. Resolves
   * with the content-free audit record kept of it.
   */
  erase(sessionId: string, options?: EraseOptions): Promise<EraseRecord>;
  /**
   * Forks a session (docs/tape.md, "Fork"): a new session (`as`) whose state
   * is the source's after the fork turn across every domain (session,
   * ledgers, memory, cost), recording where it came from; the source is
   * untouched. Rejects with `conflict` when `as` is in use.
   */
  fork(options: ForkOptions): Promise<ForkRecord>;
  /**
   * A session's cost, from the tokens its turns recorded (TURN_COMPLETED's
   * `usage`): in total and per turn, actor, model and skill, priced with the
   * price table (docs/cost.md). Unpriced models show tokens only.
   */
  cost(sessionId: string, options?: CostOptions): Promise<CostSummary>;
  /**
   * Runs the session's checks and reports each with its evidence (docs/cost.md):
   * `quick` checks the event log's contiguity; `full` adds the recipe output
   * schemas and the ledgers' replay. The session state's replay needs the
   * runner's store, which a client may not read: it is reported skipped
   * (`conclave verify` runs it).
   */
  verify(sessionId: string, level?: VerifyLevel): Promise<VerifyReport>;
  /**
   * Asks the session's next turn to compact its context whatever the pressure (docs/context.md,
   * "Compaction requests"): recorded on the session's log (COMPACTION_REQUESTED); that turn's
   * CONTEXT_COMPACTED names the reason `requested` and consumes it. Resolves with what was recorded
   * (the instructions are CONCLAVE_COMPACTION_INSTRUCTIONS of the runner when none are given).
   * A bad reason or instructions reject with `invalid_request` before anything is sent.
   */
  requestCompaction(sessionId: string, request: CompactionRequestOptions): Promise<CompactionRequestOptions>;
  /** The session's compaction request not yet consumed by a compaction, or null (read from its log). */
  pendingCompaction(sessionId: string): Promise<PendingCompaction | null>;
  /** Closes the connection the client opened (not one it was given). */
  close(): Promise<void>;
}

/**
 * Connects to Conclave as the `client` role.
 *
 * @example
 * ```ts
 * const client = await connect();
 * for await (const event of client.submit("me", "hello")) console.log(event.kind);
 * await client.close();
 * ```
 */
export async function connect(options: ConnectOptions = {}): Promise<ConclaveClient> {
  const nc =
    options.nc ??
    (await connectBus(
      busOptions("client", {
        ...(options.servers ? { servers: options.servers } : {}),
        ...(options.user ? { user: options.user } : {}),
        ...(options.password ? { password: options.password } : {}),
        ...(options.nkeySeedFile ? { nkeySeedFile: options.nkeySeedFile } : {}),
        ...(options.credsFile ? { credsFile: options.credsFile } : {}),
        ...(options.tls ? { tls: options.tls } : {}),
        ...(options.name ? { name: options.name } : {}),
        // Fails at once when no server answers; once connected, rides out a server restart.
        reconnectAttempts: -1,
      }),
    ));
  const timeoutMs = options.requestTimeoutMs ?? 5_000;
  let statuses: Promise<TurnStatusStore | null> | null = null;
  const statusStore = () => {
    statuses ??= jetstreamManager(nc)
      .then((jsm) => jsm.streams.info(`KV_${buckets.turns}`))
      // Read as it is: a client does not refuse a bucket whose replicas differ from its CONCLAVE_REPLICAS.
      .then((info) => TurnStatusStore.open(nc, { replicas: replicasOf(info) }))
      .catch((error: unknown) => {
        statuses = null; // no turn has run yet: try again next time
        if (isStreamNotFound(error)) return null;
        throw error;
      });
    return statuses;
  };
  const cancel = async (sessionId: string, turnId: number, reason?: string) => {
    checkSessionId(sessionId);
    checkTurnId(turnId);
    return requestJson(
      nc,
      subjects.turnCancel(sessionId),
      { turn_id: turnId, ...(reason ? { reason } : {}) },
      CancelReply,
      { timeoutMs },
    );
  };
  return {
    nc,
    submit: (sessionId, text, submitOptions) => streamTurn(nc, cancel, sessionId, text, submitOptions),
    events: (sessionId, eventsOptions) => readSessionEvents(nc, sessionId, eventsOptions),
    ...tapeClient(nc),
    status: async (sessionId, turnId) => {
      checkSessionId(sessionId);
      checkTurnId(turnId);
      return (await (await statusStore())?.get(sessionId, turnId)) ?? null;
    },
    turns: async (sessionId) => {
      checkSessionId(sessionId);
      return (await (await statusStore())?.list(sessionId)) ?? [];
    },
    workingMemory: (sessionId) => readSessionWorkingMemory(nc, sessionId),
    cancel,
    run: (sessionId, document, runOptions) => runRecipe(nc, sessionId, document, { timeoutMs: 120_000, ...runOptions }),
    trace: async (sessionId, turnId) => {
      checkTurnId(turnId);
      const events: EngineEvent[] = [];
      for await (const { event } of readSessionEvents(nc, sessionId, { turnId })) events.push(event);
      if (events.length === 0) throw new ConclaveError("not_found", `session ${sessionId} has no turn ${turnId}`);
      return simulationTrace(events);
    },
    memory: {
      ...memoryInsightsClient(nc, timeoutMs),
      search: async (sessionId, query, searchOptions = {}) => {
        checkSessionId(sessionId);
        const reply = await requestJson(
          nc,
          subjects.memorySearch(sessionId),
          {
            session_id: sessionId,
            query,
            limit: searchOptions.limit ?? 10,
            ...(searchOptions.tool !== undefined ? { tool: searchOptions.tool } : {}),
          },
          MemorySearchReply,
          { timeoutMs },
        );
        return reply.items;
      },
    },
    ...ledgerClients(nc, timeoutMs),
    schedules: schedulesClient(nc, timeoutMs),
    knowledge: knowledgeClient(nc, timeoutMs),
    context: contextClient(nc, timeoutMs),
    skills: skillsClient(
      async (sessionId) => {
        const events: EngineEvent[] = [];
        for await (const { event } of readSessionEvents(nc, sessionId)) events.push(event);
        return events;
      },
      // The runner waits up to 15 s for the workers' reports: the request outlasts that.
      () => requestJson(nc, subjects.skillsRefresh, {}, SkillsRefreshReply, { timeoutMs: 20_000 }),
      sessionSkillsLedger(nc, timeoutMs),
    ),
    rollback: (sessionId, turnId) => {
      checkSessionId(sessionId);
      checkTurnId(turnId);
      // Each tool's rollback has its own deadline (30 s): a few of them take longer than one request's default.
      return requestJson(nc, subjects.turnRollback(sessionId), { turn_id: turnId }, RollbackReply, {
        timeoutMs: Math.max(timeoutMs, 120_000),
      });
    },
    approvals: async (sessionId) => {
      if (sessionId !== undefined) checkSessionId(sessionId);
      return listApprovals(await statusStore(), sessionId);
    },
    approve: (id, approvalOptions) => answerApproval(nc, id, true, { requestTimeoutMs: timeoutMs, ...approvalOptions }),
    deny: (id, approvalOptions) => answerApproval(nc, id, false, { requestTimeoutMs: timeoutMs, ...approvalOptions }),
    resume: (sessionId, turnId, resumeOptions) =>
      resumeRun(nc, sessionId, turnId, { requestTimeoutMs: timeoutMs, ...resumeOptions }),
    erase: (sessionId, eraseOptions = {}) => eraseSession(nc, sessionId, eraseOptions, timeoutMs),
    fork: (forkOptions) => forkSession(nc, forkOptions, timeoutMs),
    cost: async (sessionId, costOptions = {}) => {
      checkSessionId(sessionId);
      const { prices } = costOptions;
      const table =
        prices === undefined ? priceTableFromEnv() : typeof prices === "string" ? readPriceTable(prices) : prices;
      const events: EngineEvent[] = [];
      for await (const { event } of readSessionEvents(nc, sessionId)) events.push(event);
      return summarizeCost(sessionId, events, table, {
        ...(costOptions.models ? { models: costOptions.models } : {}),
      });
    },
    verify: async (sessionId, level = "full") => {
      checkSessionId(sessionId);
      if (!VERIFY_LEVELS.includes(level))
        throw new InvalidRequestError(`bad verify level ${String(level)}: one of ${VERIFY_LEVELS.join(", ")}`);
      const ledgers = ledgerClients(nc, timeoutMs).ledgers;
      return verifySession(sessionId, level, {
        messages: () => readLoggedMessages(nc, sessionId),
        replayLedgers: () => ledgers.replay(sessionId),
        skipReason: "the session state's replay needs the runner's store: run `conclave verify` for it",
      });
    },
    requestCompaction: (sessionId, request) => requestCompaction(nc, sessionId, request, timeoutMs),
    pendingCompaction: (sessionId) =>
      pendingCompaction(
        nc,
        sessionId,
        async (session) => {
          const events: EngineEvent[] = [];
          for await (const { event } of readSessionEvents(nc, session)) events.push(event);
          return events;
        },
        timeoutMs,
      ),
    close: async () => {
      if (!options.nc) await nc.close();
    },
  };
}
