import { hostname } from "node:os";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { AGENTS } from "../../../agents/index.ts";
import { AgentDirectory } from "../../agents/directory.ts";
import type { Service } from "../../bus/service.ts";
import { setting } from "../../config/load.ts";
import { ConfigError } from "../../config/variable.ts";
import type { PipelineChoice } from "../../contracts/pipeline.ts";
import { messageOf, singleLine } from "../../errors.ts";
import { balanceEventLeaders } from "../../eventlog/eventLeaders.ts";
import { ensureEventStreams } from "../../eventlog/eventStreams.ts";
import { retentionSettings } from "../../eventlog/retention.ts";
import { SessionTrim } from "../../eventlog/sessionTrim.ts";
import { ensureDeadLetterStream } from "../../eventlog/streams.ts";
import { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import { ensureTurnWal } from "../../eventlog/turnWal.ts";
import { LedgerStore } from "../../ledgers/ledgerStore.ts";
import { backendFromEnv, loadBackendPackages } from "../../llm/backendFromEnv.ts";
import { readPipeline } from "../../recipes/pipelineChoice.ts";
import { hostSchedules } from "../../schedules/firingLoop.ts";
import { type Logger, silentLogger } from "../../telemetry/log.ts";
import { CooldownStore } from "../cooldownStore.ts";
import { IdempotencyStore } from "../intake/idempotency.ts";
import { localSubmit } from "../intake/localSubmit.ts";
import { serveIntake } from "../intake/service.ts";
import { RecipeHost } from "../recipeHost/recipeHost.ts";
import { SessionStore } from "../sessionStore.ts";
import { workingMemoryFromEnv } from "../toolCalls/workingMemory.ts";
import { startCognitionActors } from "../turnServices/cognitionActors.ts";
import type { HostedCognition } from "../turnServices/hostedCognition.ts";
import { Admission, admissionLimits } from "./admission.ts";
import { IntakeBacklog } from "./intakeBacklog.ts";
import { SessionLeases } from "./leases.ts";
import type { RunnerOptions } from "./options.ts";
import { applyRetention, graphTrimmer, retentionSweeps, withSweeps } from "./retentionParts.ts";

/** What a runner is built from: everything `Runner.start` opens before it takes a turn. */
export interface RunnerParts {
  js: JetStreamClient;
  jsm: JetStreamManager;
  store: SessionStore;
  statuses: TurnStatusStore;
  leases: SessionLeases;
  ledgers: LedgerStore;
  /** The agents live workers announce: shared by the agent calls' output checks, recipes and the intake. */
  directory: Promise<AgentDirectory>;
  recipes: RecipeHost;
  /** The runners' shared NATS service, already answering. */
  intake: Service;
  /** The turn WAL's partition count (fixed when it was made): the runner pulls its share of them. */
  partitions: number;
  /** The event log's stream count (fixed when it was made): where each session's events are written. */
  eventStreams: number;
  /** How many turns run here at once, and which wait: shared with the intake, whose acks say it. */
  admission: Admission;
  /** What the intake admitted and stored that no runner is seen with yet: a burst is held to the limits too. */
  backlog: IntakeBacklog;
  /** Retention by count (`retention.turnsPerSession`), when set: trims a session's oldest turn as each ends. */
  trim: SessionTrim | null;
  /** The scheduler, council, voice and critics this runner hosts (`hostCognition`); null: workers serve them. */
  cognition: HostedCognition | null;
}

/**
 * Opens a runner's parts, in order: the streams, the stores and leases, the
 * agent directory (its roll call goes on in the background), recipe
 * hosting, the intake service, and last the WAL's consumer.
 */
export async function openRunnerParts(nc: NatsConnection, options: RunnerOptions): Promise<RunnerParts> {
  // A bad CONCLAVE_PIPELINE (or its recipe) stops the runner before it opens anything.
  const pipeline = options.pipeline ?? pipelineFromEnv();
  const admission = new Admission(admissionLimits(options.admission));
  const backlog = new IntakeBacklog(admission);
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const [eventStreams, partitions] = await Promise.all([
    ensureEventStreams(jsm, options.eventStreams ?? setting(process.env, "CONCLAVE_EVENT_STREAMS")),
    ensureTurnWal(jsm, options.partitions ?? setting(process.env, "CONCLAVE_PARTITIONS")),
    ensureDeadLetterStream(jsm),
  ]);
  const id = options.id ?? `${hostname()}:${process.pid}`;
  const log = options.log ?? silentLogger;
  // Stream leaders bunched on one node would take every write of the log: spread them, without holding the start.
  if (nc.info?.cluster)
    void balanceEventLeaders(nc, jsm, eventStreams).then(
      (asked) => asked > 0 && log.info(`event log: asked ${asked} stream leader(s) to step down, spreading them`),
      (error: unknown) => log.debug(`event log leaders left as they are: ${messageOf(error)}`),
    );
  const [store, statuses, leases, idempotency, ledgers] = await Promise.all([
    SessionStore.open(nc),
    TurnStatusStore.open(nc),
    SessionLeases.open(nc, id, { log, ...(options.heartbeat ? { heartbeat: options.heartbeat } : {}) }),
    IdempotencyStore.open(nc, id),
    LedgerStore.open(nc, {
      onInvalid: (subject, seq) => log.warn(`stored message ${subject} (seq ${seq}) is not a ledger event: skipped`),
      onConflict: (session, attempt) =>
        log.debug(`ledger write decided again: another landed first (attempt ${attempt})`, { session_id: session }),
    }),
  ]);
  const retention = retentionSettings(options.retention);
  await applyRetention(jsm, retention, nc);
  const directory = AgentDirectory.open(nc, {
    onInvalid: (message) => log.warn(`ignored an agent announcement: ${singleLine(message)}`),
  });
  directory.catch(() => {}); // a connection closed before the roll call ended: users see it when they await
  // A bad schema (file or option) stops the runner here, before it serves.
  const workingMemory = options.workingMemory ?? workingMemoryFromEnv();
  const recipes = await RecipeHost.start(nc, {
    directory,
    js,
    partitions,
    statuses,
    log,
    ...(options.recipes ? { recipes: options.recipes } : {}),
    ...(options.inspect ? { inspect: options.inspect } : {}),
    ...(workingMemory ? { workingMemory } : {}),
  });
  // Agents run on workers unless the runner was given in-process services: then recipes' agents are not checked,
  // and it answers no roster request (`conclave agents` falls back to calling the workers' roll).
  const checked = options.services ? undefined : directory;
  const intakeDeps = {
    nc,
    js,
    partitions,
    eventStreams,
    jsm,
    sessions: store,
    statuses,
    idempotency,
    timers: recipes.timers,
    ledgers,
    // The arena the runner's turns plan with: supplements are planned with it too.
    ...(options.policy?.context ? { arena: options.policy.context } : {}),
    log,
    admission: backlog,
    recipes: {
      logicHandlers: Object.keys(options.recipes?.logicHandlers ?? {}),
      ...(checked ? { liveAgents: async () => new Set((await checked).roster().map((manifest) => manifest.id)) } : {}),
    },
    pipelines: {
      default: pipeline,
      ...(checked
        ? {
            ownAgents: async () =>
              (await checked)
                .roster()
                .map((manifest) => manifest.id)
                .filter((id) => !AGENTS.has(id)),
          }
        : {}),
    },
    ...(checked ? { roster: { directory: checked, runner: leases.runner, log } } : {}),
    erase: { runner: id, ...(options.recipes?.blackboard ? { blackboard: options.recipes.blackboard } : {}) },
  };
  // Schedules (docs/schedules.md) are fired through the intake and managed beside it, and stop with it.
  const intake = withSweeps(
    await hostSchedules(nc, { runner: id, log, submit: localSubmit(intakeDeps) }, await serveIntake(nc, intakeDeps)),
    retentionSweeps(jsm, retention, log, options.recipes?.blackboard),
    log,
  );
  const trim =
    retention.turnsPerSession === undefined
      ? null
      : new SessionTrim(
          {
            jsm,
            statusOf: (sessionId, turnId) => statuses.get(sessionId, turnId),
            log,
            trimGraph: graphTrimmer(nc, jsm, log),
          },
          retention.turnsPerSession,
        );
  const cognition = await hostedCognition(nc, options, directory, log);
  return {
    js,
    jsm,
    store,
    statuses,
    leases,
    ledgers,
    directory,
    recipes,
    intake,
    partitions,
    eventStreams,
    admission,
    backlog,
    trim,
    cognition,
  };
}

/** Sessions whose scheduler cooldowns a runner hosting the scheduler keeps in memory. */
const COOLDOWNS_REMEMBERED = 10_000;

/** The runner's default pipeline from `CONCLAVE_PIPELINE` (its recipe file read now): a bad one stops the runner. */
function pipelineFromEnv(env: NodeJS.ProcessEnv = process.env): PipelineChoice {
  return readPipeline(setting(env, "CONCLAVE_PIPELINE"), (message) => new ConfigError(`CONCLAVE_PIPELINE: ${message}`));
}

/** Whether the runner hosts the cognition actors (`hostCognition`, else `CONCLAVE_RUNNER_COGNITION`). */
export function hostsCognition(option: RunnerOptions["hostCognition"], env = process.env): boolean {
  if (option !== undefined) return option;
  return setting(env, "CONCLAVE_RUNNER_COGNITION") === "runner";
}

async function hostedCognition(
  nc: NatsConnection,
  options: RunnerOptions,
  directory: Promise<AgentDirectory>,
  log: Logger,
): Promise<HostedCognition | null> {
  if (options.services || !hostsCognition(options.hostCognition)) return null;
  const backend = backendFromEnv();
  await loadBackendPackages(backend);
  const cooldowns = await CooldownStore.open(nc, {
    remember: COOLDOWNS_REMEMBERED,
    onSaveError: (sessionId, error) => log.warn(`cooldowns of ${sessionId} not saved: ${String(error)}`),
  });
  const direct = options.cognitionCalls === "direct";
  const actors = direct
    ? undefined
    : startCognitionActors({ backend, cooldowns, ...(options.inspect ? { inspect: options.inspect } : {}) });
  return { backend, cooldowns, directory, log, ...(actors ? { actors } : {}) };
}
