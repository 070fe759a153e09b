/**
 * Every NATS subject Conclave uses, in one place. Public (documented in
 * docs/protocol.md): turn submission and the event log. Internal: worker endpoints.
 */
import { partitionOf } from "../contracts/partitions.ts";
import { turnKey } from "../contracts/turnKey.ts";

export const SUBJECT_ROOT = "conclave";

/** What the knowledge service does: `conclave.knowledge.<verb>`. */
export type KnowledgeVerb = "add" | "list" | "search" | "remove";

export const subjects = {
  /** Public: a client publishes or requests a user turn here. */
  turnSubmit: (sessionId: string) => `${SUBJECT_ROOT}.turn.submit.${sessionId}`,
  turnSubmitAll: `${SUBJECT_ROOT}.turn.submit.*`,
  /**
   * Tenant accounts (see docs/production.md, "Tenants"): a user in an account of their own
   * requests `conclave.turn.submit.<session>` and `conclave.turn.watch.<session>`;
   * the account's imports map them into the runtime's account as these
   * subjects, with the user as a token the user cannot choose.
   */
  tenantSubmitAll: `${SUBJECT_ROOT}.tenant.*.turn.submit.*`,
  tenantWatchAll: `${SUBJECT_ROOT}.tenant.*.turn.watch.*`,
  /** A tenant's memory searches and ledger requests, as its account's imports map them. */
  tenantMemorySearchAll: `${SUBJECT_ROOT}.tenant.*.memory.search.*`,
  tenantLedgerAll: `${SUBJECT_ROOT}.tenant.*.ledger.*`,
  /** Public: a client requests the cancellation of a turn here (CancelRequest). */
  turnCancel: (sessionId: string) => `${SUBJECT_ROOT}.turn.cancel.${sessionId}`,
  turnCancelAll: `${SUBJECT_ROOT}.turn.cancel.*`,
  /** Public: a person answers a suspended recipe run's human node here (ResumeRequest). */
  turnResume: (sessionId: string) => `${SUBJECT_ROOT}.turn.resume.${sessionId}`,
  turnResumeAll: `${SUBJECT_ROOT}.turn.resume.*`,
  /** Public: a client asks to undo a finished turn's write tool calls here (RollbackRequest). */
  turnRollback: (sessionId: string) => `${SUBJECT_ROOT}.turn.rollback.${sessionId}`,
  turnRollbackAll: `${SUBJECT_ROOT}.turn.rollback.*`,
  /** Core NATS, to every runner and worker: a turn was cancelled, stop its work (TurnCancelled). */
  turnCancelled: `${SUBJECT_ROOT}.turn.cancelled`,
  /** Core NATS, to every worker: a turn ended or was taken over, abort the calls still open for it (TurnEnded). */
  turnEnded: `${SUBJECT_ROOT}.turn.ended`,
  /** What a tenant requests to read its session's events (through its account's import). */
  turnWatch: (sessionId: string) => `${SUBJECT_ROOT}.turn.watch.${sessionId}`,
  /**
   * Public: the ordered events of one turn (JetStream), in the event-log stream of the session's
   * partition among the log's `streams` (`conclave.events.<stream>.<session>.<turn>`,
   * src/eventlog/eventStreams.ts).
   */
  turnEvents: (sessionId: string, turnId: number, streams: number) =>
    `${SUBJECT_ROOT}.events.${partitionOf(sessionId, streams)}.${turnKey(sessionId, turnId)}`,
  /** Every turn's events of a session (not its ledger entries: one token after the session). */
  sessionEvents: (sessionId: string, streams: number) =>
    `${SUBJECT_ROOT}.events.${partitionOf(sessionId, streams)}.${sessionId}.*`,
  /** Everything a session has in the event log: its turns and its ledger entries. */
  sessionLog: (sessionId: string, streams: number) =>
    `${SUBJECT_ROOT}.events.${partitionOf(sessionId, streams)}.${sessionId}.>`,
  /** Everything one event-log stream holds. */
  streamEvents: (stream: number) => `${SUBJECT_ROOT}.events.${stream}.>`,
  allEvents: `${SUBJECT_ROOT}.events.>`,
  /**
   * Public, core NATS (not stored): a turn's stream chunks one by one as they are made (LiveChunk), while the
   * log stores them coalesced. A tenant gets them through its watch (`conclave.turn.watch.<session>`), relayed by
   * a runner, so no subject of it is exported to tenant accounts.
   */
  liveChunks: (sessionId: string, turnId: number) => `${SUBJECT_ROOT}.live.${turnKey(sessionId, turnId)}`,
  allLiveChunks: `${SUBJECT_ROOT}.live.>`,

  agent: (agentId: string) => `${SUBJECT_ROOT}.agent.${agentId}`,
  /** Core NATS: a worker announces the agents it hosts (on start, on a roll call, every heartbeat). */
  agentsAnnounce: `${SUBJECT_ROOT}.agents.announce`,
  /** Core NATS: a worker that stops withdraws its agents. */
  agentsWithdraw: `${SUBJECT_ROOT}.agents.withdraw`,
  /** Core NATS: a directory that starts asks every worker to announce itself. */
  agentsRollcall: `${SUBJECT_ROOT}.agents.rollcall`,
  /** Requested of the runners (`conclave agents`): the roster a runner's turns are planned with (AgentRoster). */
  agentsRoster: `${SUBJECT_ROOT}.agents.roster`,
  /** Core NATS: where a worker publishes an agent's named stream parts for the runner that asked (one token per runner). */
  agentStream: (token: string) => `${SUBJECT_ROOT}.agentstream.${token}`,
  /** A tool, served by the workers that host it (queue group: each call goes to one). */
  tool: (name: string) => `${SUBJECT_ROOT}.tool.${name}`,
  /** Where a worker asks the runner running a turn for an agent's tool call (one token per runner). */
  toolGate: (token: string) => `${SUBJECT_ROOT}.toolgate.${token}`,
  schedulerPlan: `${SUBJECT_ROOT}.scheduler.plan`,
  councilDecide: `${SUBJECT_ROOT}.council.decide`,
  councilSafety: `${SUBJECT_ROOT}.council.safety`,
  voiceRender: `${SUBJECT_ROOT}.voice.render`,
  critic: (name: string) => `${SUBJECT_ROOT}.critic.${name}`,
  memoryRetrieve: `${SUBJECT_ROOT}.memory.retrieve`,
  memoryCommit: `${SUBJECT_ROOT}.memory.commit`,
  /** Public: search a session's memory (MemorySearchRequest); a runner relays it to the memory service. */
  memorySearch: (sessionId: string) => `${SUBJECT_ROOT}.memory.search.${sessionId}`,
  memorySearchAll: `${SUBJECT_ROOT}.memory.search.*`,
  /** Public: a session's memory insights (MemoryInsightRequest); a runner relays it to the memory service. */
  memoryInsight: (sessionId: string) => `${SUBJECT_ROOT}.memory.insight.${sessionId}`,
  memoryInsightAll: `${SUBJECT_ROOT}.memory.insight.*`,
  /** Public: a ledger operation on a session (LedgerRequest): the truth and task ledgers, served by runners. */
  ledger: (sessionId: string) => `${SUBJECT_ROOT}.ledger.${sessionId}`,
  ledgerAll: `${SUBJECT_ROOT}.ledger.*`,
  /**
   * Internal: an agent's ledger operation (AgentLedgerRequest), requested by the worker hosting it,
   * served by runners. Only the worker role may publish it: it alone records a change as an agent's.
   */
  agentLedger: (sessionId: string) => `${SUBJECT_ROOT}.agentledger.${sessionId}`,
  agentLedgerAll: `${SUBJECT_ROOT}.agentledger.*`,
  /**
   * JetStream (the event log): a session's ledger events. Two tokens after the session,
   * so `sessionEvents` (one token: the turns) does not match them.
   */
  ledgerEvents: (sessionId: string, streams: number) =>
    `${SUBJECT_ROOT}.events.${partitionOf(sessionId, streams)}.${sessionId}.ledger.entries`,
  /** JetStream (the event log): a session's memory insight events (MemoryInsightEvent), two tokens after the session. */
  insightEvents: (sessionId: string, streams: number) =>
    `${SUBJECT_ROOT}.events.${partitionOf(sessionId, streams)}.${sessionId}.memory.insights`,
  /**
   * Public: knowledge collections (docs/knowledge.md): `add`, `list`, `search`, `remove` of a
   * collection's documents (KnowledgeAddRequest, …), relayed by a runner to the knowledge workers.
   */
  knowledge: (verb: KnowledgeVerb) => `${SUBJECT_ROOT}.knowledge.${verb}`,
  knowledgeAll: `${SUBJECT_ROOT}.knowledge.*`,
  /**
   * Internal: a knowledge request as a runner relays it, with the tenant who asked
   * (KnowledgeQuery), served by the knowledge workers (queue group). Only runners may publish it.
   */
  knowledgeQuery: (verb: KnowledgeVerb) => `${SUBJECT_ROOT}.knowledge.query.${verb}`,
  /** A tenant's knowledge requests, as its account's imports map them: `conclave.tenant.<tenant>.knowledge.<verb>`. */
  tenantKnowledgeAll: `${SUBJECT_ROOT}.tenant.*.knowledge.*`,
  /** A runner asks the memory service (workers) for a search. */
  memoryQuery: `${SUBJECT_ROOT}.memory.query`,
  /** A runner asks the memory service (workers) about a session's insights. */
  memoryInsights: `${SUBJECT_ROOT}.memory.insights`,
  /**
   * JetStream write-ahead log of accepted turns, one subject per session (keeps their order), under
   * the session's partition (`partitionOf`, src/contracts/partitions.ts).
   */
  wal: (partition: number, sessionId: string) => `${SUBJECT_ROOT}.wal.${partition}.${sessionId}`,
  /** The WAL subject of a session's entries, in a WAL of `partitions` partitions. */
  walOf: (sessionId: string, partitions: number) =>
    `${SUBJECT_ROOT}.wal.${partitionOf(sessionId, partitions)}.${sessionId}`,
  /** One partition's WAL entries: what the runner owning it takes. */
  walPartition: (partition: number) => `${SUBJECT_ROOT}.wal.${partition}.*`,
  /** A session's WAL entries, whatever its partition (an erase purges them by this filter). */
  sessionWal: (sessionId: string) => `${SUBJECT_ROOT}.wal.*.${sessionId}`,
  allWal: `${SUBJECT_ROOT}.wal.>`,
  /** JetStream: rejected input and poison turns, kept for inspection. */
  deadLetter: (source: string) => `${SUBJECT_ROOT}.dlq.${source}`,
  allDeadLetters: `${SUBJECT_ROOT}.dlq.>`,
  /** Core NATS: inspection events a runner or worker started with --inspect publishes, one subject per process. */
  inspect: (processName: string) => `${SUBJECT_ROOT}.inspect.${processName}`,
  allInspect: `${SUBJECT_ROOT}.inspect.>`,
  /** Core NATS: errors for fire-and-forget submitters. */
  sessionErrors: (sessionId: string) => `${SUBJECT_ROOT}.errors.${sessionId}`,
  /** The same for a tenant's submitters (its account imports them as `conclave.errors.*`). */
  tenantErrors: (tenant: string, sessionId: string) => `${SUBJECT_ROOT}.tenant.${tenant}.errors.${sessionId}`,
  /** JetStream: one subject per stored episode. */
  memoryEpisode: (sessionId: string, turnId: number) => `${SUBJECT_ROOT}.memory.episode.${turnKey(sessionId, turnId)}`,
  allEpisodes: `${SUBJECT_ROOT}.memory.episode.>`,
  /** Public: erase everything stored of a session (EraseRequest), served by runners (docs/operations.md, "Data lifecycle"). */
  sessionErase: (sessionId: string) => `${SUBJECT_ROOT}.session.erase.${sessionId}`,
  sessionEraseAll: `${SUBJECT_ROOT}.session.erase.*`,
  tenantSessionEraseAll: `${SUBJECT_ROOT}.tenant.*.session.erase.*`,
  /** Public: fork a session at a turn as a new session (ForkRequest), served by runners (docs/tape.md). */
  sessionFork: (sessionId: string) => `${SUBJECT_ROOT}.session.fork.${sessionId}`,
  sessionForkAll: `${SUBJECT_ROOT}.session.fork.*`,
  /** JetStream (CONCLAVE_AUDIT): one content-free record per erase; never erased itself. */
  /** Core NATS, runners only: a session was erased (`{ session_id }`); every runner forgets what it holds of it. */
  sessionErased: `${SUBJECT_ROOT}.session.erased`,
  /** Public: re-read the workers' skills directories (docs/skills.md), served by runners, which ask the workers. */
  skillsRefresh: `${SUBJECT_ROOT}.skills.refresh`,
  /** Internal: a runner asks every worker with skills to re-read its directory; each answers with what changed. */
  skillsReload: `${SUBJECT_ROOT}.skills.reload`,
  /** Public: create, update, cancel or list schedules (ScheduleRequest), served by runners (docs/schedules.md). */
  scheduleManage: `${SUBJECT_ROOT}.schedules.manage`,
  /** JetStream (CONCLAVE_SCHEDULES): the schedule log, one subject per intent. */
  scheduleLog: (intentId: string) => `${SUBJECT_ROOT}.schedules.log.${intentId}`,
  allScheduleLog: `${SUBJECT_ROOT}.schedules.log.>`,
  auditErase: (sessionId: string) => `${SUBJECT_ROOT}.audit.erase.${sessionId}`,
  allAudit: `${SUBJECT_ROOT}.audit.>`,
} as const;

/** JetStream streams and KV buckets. */
export const streams = {
  memory: "CONCLAVE_MEMORY",
  turns: "CONCLAVE_TURNS",
  deadLetters: "CONCLAVE_DEAD_LETTERS",
  /** Erase audit records (content-free), kept apart so that erasing a session never removes them. */
  audit: "CONCLAVE_AUDIT",
  /** The schedule log: intents created, updated, cancelled, fired, deferred, converged (docs/schedules.md). */
  schedules: "CONCLAVE_SCHEDULES",
} as const;

/** One stream of the event log (src/eventlog/eventStreams.ts): `CONCLAVE_EVENTS_<index>`. */
export const eventStream = (index: number): string => `CONCLAVE_EVENTS_${index}`;
/** The stream of a session's events, in an event log of `count` streams. */
export const eventStreamOf = (sessionId: string, count: number): string => eventStream(partitionOf(sessionId, count));
/**
 * The stream an event-log subject or filter (`conclave.events.<stream>.…`) is stored in: the index is
 * the subject's third token, so whoever holds a subject needs nothing more to find its stream.
 */
export function eventStreamOfSubject(subject: string): string {
  const index = subject.split(".", 3)[2];
  if (index === undefined || !/^\d+$/.test(index)) throw new Error(`not an event-log subject: ${subject}`);
  return eventStream(Number(index));
}
/** The one event stream of a log made before it had several (0.1); `conclave migrate events` moves it over. */
export const LEGACY_EVENT_STREAM = "CONCLAVE_EVENTS";

/**
 * The durable consumer of one WAL partition, pulled by the runner that owns it. (`conclave-runners`, the
 * one consumer all runners shared before partitions, is removed once empty: `ensureTurnWal`.)
 */
export const runnerConsumer = (partition: number): string => `conclave-runners-p${partition}`;
/** The consumer all runners shared before the WAL had partitions (0.1): removed when a runner finds it empty. */
export const LEGACY_RUNNER_CONSUMER = "conclave-runners";
/**
 * The KV bucket of blackboards (src/blackboard/natsStore.ts; the runner role needs
 * `$KV.conclave_blackboards.>` and its stream's API subjects). Not in `buckets`: only a recipe run opens it.
 */
export const BLACKBOARD_BUCKET = "conclave_blackboards";
export const buckets = {
  sessions: "conclave_sessions",
  scheduler: "conclave_scheduler",
  turns: "conclave_turns",
  /** Which runner hosts a session: key `<session>`, written once when a runner takes it (docs/operations.md, "Session ownership"). */
  owners: "conclave_session_owners",
  /** Runner liveness: key per runner, renewed every 500 ms, gone 1.5 s after its runner stops renewing it. */
  runners: "conclave_runners",
  /** Recipe runs suspended at a human node with a timeout, keyed `<session>.<turn>`: runners time them out. */
  suspended: "conclave_suspended",
  /** The memory graph (src/memory/graph): keys `<session>.n.<node id>` and `<session>.e.<edge hash>`. */
  memoryGraph: "conclave_memory_graph",
  /** The ledgers' projection (src/ledgers): key `<session>`, both ledgers folded from the log, for fast reads. */
  ledgers: "conclave_ledgers",
  /** One key per schedule fire, `<intent>.<due ms>`, created if absent: exactly one runner fires each due time. */
  scheduleFires: "conclave_schedule_fires",
  /** Tool results too large to give an agent whole, keyed `<session>.<turn>.<n>`, kept 24 h (docs/context.md). */
  toolOutputs: "conclave_tool_outputs",
  /**
   * Workers' step answers and claims for a takeover (src/bus/sharedSteps.ts), keyed by the step, e.g.
   * `<session>.council.<turn>`; kept 60 s (the bucket's max_age: nats-server 2.9 has no per-key TTL).
   */
  stepReplies: "conclave_step_replies",
  /**
   * Knowledge collections (src/knowledge): `doc.<owner>.<collection>.<doc id>` and
   * `chunk.<owner>.<collection>.<doc id>.<n>` (text and vector), the owner a tenant's name or `-`.
   */
  knowledge: "conclave_knowledge",
} as const;
