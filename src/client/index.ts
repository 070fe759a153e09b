/**
 * `conclave/client`: submit turns, run recipes, follow and read their events, cancel them, answer suspended runs,
 * search memory, read and write the truth and task ledgers.
 *
 * @example
 * ```ts
 * import { connect } from "conclave/client";
 *
 * const client = await connect();
 * const turn = client.submit("me", "I'm stressed about my deadline");
 * for await (const event of turn) if (event.kind === "STREAM_CHUNK") process.stdout.write(event.payload.delta);
 * console.log((await turn.result).outcome.status);
 * await client.close();
 * ```
 *
 * @packageDocumentation
 */

export type { BusAccess, TlsFiles } from "../bus/connection.ts";
export type { EraseRecord, EraseRequest } from "../contracts/erase.ts";
export {
  type EngineEvent,
  type EventBody,
  EventEnvelope,
  type EventKind,
  type EventPayload,
  EventPayloads,
} from "../contracts/events.ts";
export type { ForkPoint, ForkRecord } from "../contracts/fork.ts";
export { FormatTooNewError } from "../contracts/format.ts";
export type {
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
export type { MemoryItem } from "../contracts/memory.ts";
export type { EvolvesEdgeReview, MemoryInsight, MemoryInsightEvent } from "../contracts/memoryInsights.ts";
export type { AgentsPipeline, PipelineChoice } from "../contracts/pipeline.ts";
export type { JsonObject, ResumeReply, ToolApproval } from "../contracts/recipeRun.ts";
export type { SkillsRefreshReply, WorkerSkillsRefresh } from "../contracts/skill.ts";
export type { SessionSkillChange } from "../contracts/skillActivations.ts";
export type { SupplementCommitResult, SupplementPlan } from "../contracts/supplement.ts";
export type { RollbackReply } from "../contracts/tool.ts";
export { SimulationStep, SimulationTrace, simulationTraceJsonSchema } from "../contracts/trace.ts";
export type { Stage, TurnAck, TurnOutcome, TurnWarning } from "../contracts/turn.ts";
export type { TurnUsage, Usage } from "../contracts/usage.ts";
export type { TurnStatus, TurnStatusRecord } from "../contracts/wal.ts";
export type {
  WorkerConflict,
  WorkerMerge,
  WorkerResult,
  WorkerResultInput,
  WorkerResultsState,
} from "../contracts/workerResults.ts";
export type { WorkingMemoryRecord } from "../contracts/workingMemory.ts";
export type { ModelPrice, PriceTable } from "../cost/prices.ts";
export type { CostAmount, CostRow, CostSummary } from "../cost/summary.ts";
export { InvalidRequestError } from "../errors.ts";
export type { RecipeRunResult } from "../eventlog/followRun.ts";
export { TurnTimeoutError } from "../eventlog/followRun.ts";
export type { EventQuery, EventRange, LoggedEvent } from "../eventlog/query.ts";
export type { SearchHit, SearchOptions } from "../eventlog/search.ts";
export type { TapeEnd, TapeStatus } from "../eventlog/tapeStatus.ts";
export type {
  BoundToSession,
  LedgersClient,
  LedgerWriteOptions,
  SessionLedgers,
  TaskLedgerClient,
  TruthLedgerClient,
  WorkerResultsClient,
} from "../ledgers/clients.ts";
export { describeStep, simulationTrace } from "../recipes/trace.ts";
export {
  IntentAction,
  IntentPatch,
  IntentSpec,
  IntentWhen,
  ScheduleCondition,
  SchedulePredicate,
} from "../schedules/intent.ts";
export type { ComposePlanCheck, ComposePlanProblem } from "../skills/composePlan.ts";
export type { SkillDefinition } from "../skills/definition.ts";
export type { ActiveSkill, SkillOutput } from "../skills/outputs.ts";
export type { VerifyCheck } from "../verify/checks.ts";
export type { VerifyLevel, VerifyReport } from "../verify/verify.ts";
export type { ApprovalOptions, PendingApproval } from "./approvals.ts";
export {
  type CancelResult,
  type ConclaveClient,
  type ConnectOptions,
  type CostOptions,
  connect,
  type TurnStatusView,
} from "./client.ts";
export type { CompactionRequestOptions, PendingCompaction } from "./compaction.ts";
export type { EraseOptions } from "./erase.ts";
export { type CaseChange, type ComparableRun, compareReports, type EvalComparison } from "./eval/compare.ts";
export {
  type DatasetCase,
  type EvalCaseInput,
  parseDataset,
  type ScorerInput,
  type ScorerSpec,
} from "./eval/dataset.ts";
export { type Judge, type JudgeRequest, type JudgeVerdict, offlineJudge } from "./eval/judge.ts";
export {
  type CaseResult,
  DEFAULT_EVAL_THRESHOLD,
  type EvalOptions,
  type EvalReport,
  runEval,
} from "./eval/runEval.ts";
export type { ScoreResult } from "./eval/scorers.ts";
export type { EvalTarget } from "./eval/target.ts";
export type { ForkOptions } from "./fork.ts";
export type {
  AddedDocument,
  AddProgress,
  DocumentFormat,
  DocumentSource,
  KnowledgeAddOptions,
  KnowledgeClient,
  KnowledgeDocument,
  KnowledgeHit,
  KnowledgeSearchOptions,
} from "./knowledge.ts";
export type { EvolvesEdgeDecision, InsightsRefresh, MemoryInsightsClient } from "./memoryInsights.ts";
export type { ResumeOptions, RunOptions } from "./recipeRun.ts";
export type { ScheduleChanges, ScheduleSpec, SchedulesClient, ScheduleView } from "./schedules.ts";
export type { EventsOptions, SessionEvent } from "./sessionEvents.ts";
export type { ComposePlanOptions, ConsumedOutputsOptions, SkillsClient } from "./skills.ts";
export type {
  ContextClient,
  SupplementCommitOptions,
  SupplementPlanOptions,
} from "./supplement.ts";
export type { TapeClient } from "./tape.ts";
export type { SubmitOptions, TurnResult, TurnStream } from "./turnStream.ts";
export { TurnFailedError, TurnSuspendedError } from "./turns.ts";
