import type { InspectionEvent, Observer } from "xstate";
import type { BlackboardOptions } from "../../blackboard/open.ts";
import type { BusOptions } from "../../bus/connection.ts";
import type { PipelineChoice } from "../../contracts/pipeline.ts";
import type { TurnPolicy } from "../../contracts/turnProtocol.ts";
import type { RetentionOptions } from "../../eventlog/retention.ts";
import type { Logger } from "../../telemetry/log.ts";
import type { ToolPolicyInput } from "../../tools/policy.ts";
import type { InterceptorChains } from "../interception/interceptors.ts";
import type { LogicHandler } from "../recipeHost/recipeActors.ts";
import type { WorkingMemoryOptions } from "../toolCalls/workingMemory.ts";
import type { TurnServices } from "../turnServices/turnServices.ts";
import type { AdmissionLimits } from "./admission.ts";

/** How a runner runs turns. Every field has a default. */
export interface RunnerOptions {
  /** Stage deadlines and agent budgets. Default: defaultTurnPolicy. */
  policy?: TurnPolicy;
  /**
   * Where the turn's work is done. Default: workers over NATS.
   * @internal tests and benchmarks run the stages in-process
   */
  services?: TurnServices;
  /**
   * Run the scheduler, the council (with the voice) and the critics in this process instead of asking
   * workers for them: four hops fewer per turn (docs/BENCHMARKS.md). Agents and memory stay on
   * workers. They think with the model the environment configures, as a worker does
   * (`CONCLAVE_LLM_*`, else the offline model). Default: true when `CONCLAVE_RUNNER_COGNITION=runner`
   * (what `conclave up` starts), else false (workers serve them).
   */
  hostCognition?: boolean;
  /**
   * How a runner hosting them (`hostCognition`) runs the scheduler, council, voice and critics: as
   * XState actors of its own (the default, seen by the inspector and the viewer), or as plain calls.
   * @internal the bench's comparison of the two (bench/cognitionActors.ts)
   */
  cognitionCalls?: "actors" | "direct";
  /**
   * The turn pipeline of sessions that chose none (a submission's `pipeline` chooses one for its
   * session): the built-in `cognitive` one, only the user's `agents`, or a recipe. Default:
   * `CONCLAVE_PIPELINE` (read when the runner starts), else cognitive.
   */
  pipeline?: PipelineChoice;
  /** Request and response interceptors. Default: prompt-injection guard and PII redaction. */
  interceptors?: InterceptorChains;
  /** Turns that waited longer than this before a runner took them are expired, not run. Default 10 min. */
  turnTtlMs?: number;
  /** A replay checkpoint is saved every this many turns of a session. Default 10. */
  checkpointEvery?: number;
  /**
   * A session with no turn for this long leaves the runner's memory (its next turn restores it from its
   * stored state). Default: `CONCLAVE_IDLE_SESSION_TTL_MS`, else 10 min.
   */
  idleSessionTtlMs?: number;
  /**
   * How the runner's liveness heartbeat connects: given, it beats from a thread of its own with a
   * connection of its own, so a busy event loop never lets the runner's lease lapse (it lapses when
   * NATS is out of reach, or when the event loop stops answering for 10 s). `startRunner` and
   * `conclave runner` give it their own connection settings. Default: heartbeats share the runner's
   * connection and event loop (a stall past 1.5 s lets the lease lapse).
   */
  heartbeat?: BusOptions;
  /** This runner's name in leases and turn status. Default `<host>:<pid>`. */
  id?: string;
  /**
   * How many partitions the turn WAL is made with, when this runner is the one that makes it
   * (docs/operations.md, "Scaling out"). Fixed from then on: asking an existing WAL for another
   * count is a `config` error. Default: `CONCLAVE_PARTITIONS`, else 16 (`DEFAULT_PARTITIONS`).
   */
  partitions?: number;
  /**
   * How many streams the event log is made with, when this runner is the one that makes it
   * (docs/operations.md, "Scaling out"). Fixed from then on, like `partitions`. Default:
   * `CONCLAVE_EVENT_STREAMS`, else 3 (`DEFAULT_EVENT_STREAMS`).
   */
  eventStreams?: number;
  /** Where the runner logs. Default: nothing. */
  log?: Logger;
  /** Receives the inspection events of every session and turn actor (the Stately inspector's protocol). */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /** How recipe runs are hosted. Every field has a default. */
  recipes?: RecipeRunnerOptions;
  /**
   * Admission control: how many turns run at once and how many may wait. Default: from the
   * environment (`CONCLAVE_MAX_RUNNING_TURNS`, `CONCLAVE_MAX_QUEUED_TURNS`, `CONCLAVE_TENANT_QUOTA`),
   * else 32 running turns per core and 64 waiting per running place, no tenant quota.
   */
  admission?: Partial<AdmissionLimits>;
  /**
   * How long events, turn statuses and episodes are kept (docs/operations.md, "Data lifecycle"):
   * applied to the streams and buckets at start. Default: from the environment
   * (`CONCLAVE_RETAIN_EVENTS`, `CONCLAVE_RETAIN_TURN_STATUSES`, `CONCLAVE_RETAIN_EPISODES`), else
   * each store is left as it is (new ones keep everything).
   */
  retention?: RetentionOptions;
  /**
   * Each session's working memory (docs/knowledge.md, "Working memory"): its schema, which every
   * update must fit. Pipeline agents read it (`ctx.memory.working`); those listing the
   * `update_working_memory` tool change it. Default: from `CONCLAVE_WORKING_MEMORY_SCHEMA`, else none.
   */
  workingMemory?: WorkingMemoryOptions;
}

/** How a runner hosts recipe runs. */
export interface RecipeRunnerOptions {
  /**
   * Handlers for workflow `logic` steps, by step id. A recipe with a `logic` step that has no
   * handler here is refused: the document's own code never runs. Default: none.
   */
  logicHandlers?: Record<string, LogicHandler>;
  /**
   * Where blackboards with `persistence: redis` / `postgres` are kept. Default: the
   * `CONCLAVE_REDIS_URL` / `CONCLAVE_POSTGRES_URL` environment variables; without them
   * such recipes fail with a clear error. `nats` (the default persistence) needs nothing.
   */
  blackboard?: Pick<BlackboardOptions, "redisUrl" | "postgresUrl" | "timeoutMs">;
  /** Budget of one agent call of a recipe node. Default 60 s (capped by the run's own deadline). */
  nodeTimeoutMs?: number;
  /**
   * How recipe agents' tool calls are governed: the runner's policy (a recipe's `policy.tools`
   * applies too, and for each call the stricter wins). Default: DEFAULT_TOOL_POLICY (allow, with
   * `critical` tools refused until approved, 32 calls a turn, 4 at once per session).
   */
  toolPolicy?: ToolPolicyInput;
  /** Budget of one tool call. Default 30 s. */
  toolTimeoutMs?: number;
}
