import type { NatsConnection } from "@nats-io/nats-core";
import { createActor } from "xstate";
import { sessionMachine } from "../../../machines/session.ts";
import { defaultTurnPolicy } from "../../../machines/turn/index.ts";
import type { AgentDirectory } from "../../agents/directory.ts";
import { arenaPolicyFromEnv } from "../../context/arena.ts";
import { tokenizerFor } from "../../context/tokenizer.ts";
import { turnKey } from "../../contracts/turnKey.ts";
import type { EventLogWriter } from "../../eventlog/writer.ts";
import type { LedgerStore } from "../../ledgers/ledgerStore.ts";
import type { Logger } from "../../telemetry/log.ts";
import { type Failpoint, failpoint, failpointArmed } from "../failpoints.ts";
import { screeningInterceptor, storedRecordScreen } from "../interception/intercepted.ts";
import { defaultInterceptors } from "../interception/interceptors.ts";
import type { RecipeHost } from "../recipeHost/recipeHost.ts";
import type { SessionSnapshot } from "../sessionStore.ts";
import { AgentsPipelineTurns } from "../turnServices/agentsPipeline.ts";
import { type HostedCognition, hostedCognitionInterceptor } from "../turnServices/hostedCognition.ts";
import { knowledgeRetrievalInterceptor, type TurnTenants, workersSearch } from "../turnServices/knowledgeRetrieval.ts";
import { ledgerDigestInterceptor } from "../turnServices/ledgerContext.ts";
import { provideTurn } from "../turnServices/provideTurn.ts";
import { type RecordedStepsOptions, recordedStepsInterceptor, recordedStepsOf } from "../turnServices/recordedSteps.ts";
import { remoteTurnServices } from "../turnServices/remoteTurnServices.ts";
import { replyFallbackInterceptor } from "../turnServices/replyFallback.ts";
import { runnerTurnServices } from "../turnServices/runnerTurnServices.ts";
import { skillRecordsInterceptor } from "../turnServices/skillRecording.ts";
import { stepTimingsInterceptor } from "../turnServices/stepTimings.ts";
import { tracingInterceptor } from "../turnServices/tracedServices.ts";
import type { RunnerOptions } from "./options.ts";
import type { SessionActor } from "./sessionHost.ts";
import type { TurnEnds } from "./turnEnds.ts";

/** What a runner's session actors are made with. */
export interface SessionActorDeps {
  /** Where agents are asked, unless `options.services` runs them in-process. */
  nc: NatsConnection;
  directory: Promise<AgentDirectory>;
  /** The sessions' ledgers: agents get their digest. */
  ledgers: LedgerStore;
  log: Logger;
  /** Where the turns' events are recorded. */
  writer: EventLogWriter;
  /** Runs recipe turns. */
  recipes: RecipeHost;
  /** Where the sessions report their turns' ends. */
  ends: Pick<TurnEnds, "suspended" | "finished" | "crashed">;
  /** The scheduler, council, voice and critics, when this runner hosts them; else workers are asked. */
  cognition?: HostedCognition | null;
  /** Each running turn's tenant: the owner of the knowledge collections its agents may read. */
  tenants: TurnTenants;
}

/**
 * The factory of a runner's session actors: the session machine, its
 * pipeline and recipe turns asking agents through the same services (the
 * ledgers' digest, then the interceptors), recording their events in the
 * event log, and reporting their ends to `ends`.
 */
export function sessionActors(
  deps: SessionActorDeps,
  options: RunnerOptions,
): (sessionId: string, snapshot: SessionSnapshot | null) => SessionActor {
  const { writer, ends } = deps;
  const chains = options.interceptors ?? defaultInterceptors();
  const given = options.policy ?? defaultTurnPolicy;
  // The context arena's budget from CONCLAVE_CONTEXT_*: a bad value stops the runner here, at its start.
  const arena = given.context ?? arenaPolicyFromEnv();
  const policy = { ...given, context: arena };
  // The encoding's table takes a moment to load: now, rather than in the first turn.
  tokenizerFor(arena.model).warm();
  const stored = storedRecordScreen(chains);
  const record = (context: { session_id: string; turn_id: number }, event: Parameters<typeof stored>[1]) =>
    writer.append(context.session_id, context.turn_id, stored(context, event));
  // A pipeline turn taken over answers its recorded steps from its log and does not append their events again.
  const stepsOf = (sessionId: string, turnId: number) => recordedStepsOf(writer.storedEvents(sessionId, turnId));
  /** A pipeline turn suspended for an approval: the seq of its TURN_SUSPENDED, which its answer names. */
  const suspensions = new Map<string, number>();
  const replayed = (context: { session_id: string; turn_id: number }, event: Parameters<typeof stored>[1]) => {
    const screened = stored(context, event);
    pipeline.observe(context, screened);
    ownAgents.observe(context, screened);
    const steps = stepsOf(context.session_id, context.turn_id);
    const admitted = steps ? steps.admit(screened) : screened;
    const appended = admitted ? writer.append(context.session_id, context.turn_id, admitted) : undefined;
    if (appended?.kind === "TURN_SUSPENDED")
      suspensions.set(`${turnKey(context.session_id, context.turn_id)}`, appended.seq);
  };
  // Pipeline agents that name tools or delegates get them through the recipe runs' gate and policy.
  const pipeline = deps.recipes.pipelineTools;
  // Turns of the `agents` pipeline: only the user's agents, and their answer is the reply.
  const ownAgents = new AgentsPipelineTurns();
  // The workers (the council and voice, unless this runner hosts them, with the deterministic ones answering
  // when they cannot), or the services a test gives; every layer around them in the order runnerTurnServices
  // declares. Agents' skill work is recorded as their replies arrive, a recipe node's with its node.
  const inProcess = options.services;
  const services = runnerTurnServices(inProcess ?? remoteTurnServices(deps.nc, { directory: deps.directory }), {
    shared: {
      skillRecords: skillRecordsInterceptor(record, { ledgers: deps.ledgers, log: deps.log }),
      stepTimings: stepTimingsInterceptor(writer.level, record),
      tracing: tracingInterceptor(),
      knowledge: knowledgeRetrievalInterceptor({
        search: workersSearch(deps.nc),
        directory: deps.directory,
        tenants: deps.tenants,
        arena,
        log: deps.log,
      }),
      screening: screeningInterceptor(chains),
      ledgerDigest: ledgerDigestInterceptor(deps.ledgers, deps.log),
      agentsPipeline: ownAgents.interceptor(),
      replyFallback: inProcess
        ? null
        : replyFallbackInterceptor({ stageTimeoutMs: policy.stage_timeout_ms, log: deps.log }),
      hostedCognition: inProcess || !deps.cognition ? null : hostedCognitionInterceptor(deps.cognition),
    },
    pipeline: (below) => ({
      recordedSteps: recordedStepsInterceptor(stepsOf, { beforeLive: stopAtFailpoint(writer) }),
      pipelineTools: pipeline.interceptor(below, {
        record,
        flushed: (turn) => writer.flushed(turn.session_id, turn.turn_id),
        stored: (sessionId, turnId) => writer.storedEvents(sessionId, turnId),
      }),
    }),
  });
  const turn = provideTurn(services.pipeline, replayed);
  const recipeTurn = deps.recipes.logic(services.recipe, record, (turn) =>
    writer.flushed(turn.session_id, turn.turn_id),
  );
  const session = sessionMachine.provide({
    actors: { turn, recipeTurn },
    actions: {
      turnSuspended: ({ context }, given) => {
        pipeline.ended(context.session_id, given.turn_id);
        ownAgents.ended(context.session_id, given.turn_id);
        deps.tenants.ended(context.session_id, given.turn_id);
        const key = `${turnKey(context.session_id, given.turn_id)}`;
        const seq = given.suspended?.seq ?? suspensions.get(key);
        suspensions.delete(key);
        const output =
          given.suspended && seq !== undefined ? { ...given, suspended: { ...given.suspended, seq } } : given;
        void ends.suspended(context.session_id, output, {
          turns_completed: context.turns_completed,
          last_turn_id: context.last_turn_id,
          modulators: context.modulators,
          stance: context.stance,
          context_arena: context.context_arena,
        });
      },
      // Runs after the session's assign: its context already counts this turn, so the snapshot is taken now,
      // in turn order, not after the awaits that follow.
      turnFinished: ({ context }, output) => {
        pipeline.ended(context.session_id, output.turn_id);
        ownAgents.ended(context.session_id, output.turn_id);
        deps.tenants.ended(context.session_id, output.turn_id);
        void ends.finished(context.session_id, output, {
          turns_completed: context.turns_completed,
          last_turn_id: context.last_turn_id,
          modulators: output.modulators,
          stance: output.stance,
          context_arena: output.context_arena ?? context.context_arena,
        });
      },
      turnCrashed: ({ context }, failure) => {
        pipeline.ended(context.session_id, failure.turn_id);
        ownAgents.ended(context.session_id, failure.turn_id);
        deps.tenants.ended(context.session_id, failure.turn_id);
        void ends.crashed(context.session_id, failure.turn_id, failure.error);
      },
    },
  });
  return (sessionId: string, snapshot: SessionSnapshot | null) =>
    createActor(session, {
      input: { session_id: sessionId, policy, ...(snapshot ?? {}) },
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
}

/** Failpoints of the pipeline (tests only): the runner dies before the step, once every earlier event is stored. */
function stopAtFailpoint(writer: EventLogWriter): RecordedStepsOptions["beforeLive"] {
  return async (step, turn, attempt) => {
    const point: Failpoint | null =
      step === "voice" && attempt === 1
        ? "turn.before_voice"
        : step === "critics" && attempt >= 2
          ? "turn.before_critics_retry"
          : null;
    if (point === null || !failpointArmed(point)) return;
    await writer.flushed(turn.session_id, turn.turn_id);
    failpoint(point);
  };
}
