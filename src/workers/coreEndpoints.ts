import type { ServiceGroup } from "@nats-io/services";
import { fromPromise } from "xstate";
import { AGENTS } from "../../agents/index.ts";
import { type ServeOptions, serveActor } from "../bus/serveActor.ts";
import { subjects } from "../bus/subjects.ts";
import { decide, safetyCouncil } from "../cognition/council.ts";
import { runCritics } from "../cognition/critics.ts";
import { planWaves } from "../cognition/scheduler.ts";
import { renderOffline } from "../cognition/voice.ts";
import {
  CouncilDecision,
  CouncilRequest,
  SafetyCouncilReply,
  SafetyCouncilRequest,
  VoiceReply,
  VoiceRequest,
} from "../contracts/council.ts";
import { CriticRequest, CriticsReply } from "../contracts/critic.ts";
import { PlanWavesReply, PlanWavesRequest } from "../contracts/scheduler.ts";

/** The scheduler actor: plans the turn's agent waves from the roster's manifests. */
export function serveScheduler(group: ServiceGroup, options: ServeOptions = {}): void {
  const manifests = [...AGENTS.values()].map((agent) => agent.manifest);
  serveActor(
    group,
    {
      name: "plan",
      subject: subjects.schedulerPlan,
      request: PlanWavesRequest,
      logic: fromPromise<PlanWavesReply, PlanWavesRequest>(async ({ input }) =>
        planWaves(manifests, input.sensors, input.modulators),
      ),
      reply: (output) => PlanWavesReply.parse(output),
    },
    options,
  );
}

/** The council actor (decision and safety interrupt) and the voice that renders its speech act. */
export function serveCouncil(group: ServiceGroup, options: ServeOptions = {}): void {
  serveActor(
    group,
    {
      name: "decide",
      subject: subjects.councilDecide,
      request: CouncilRequest,
      logic: fromPromise<CouncilDecision, CouncilRequest>(async ({ input }) => decide(input.context)),
      reply: (output) => CouncilDecision.parse(output),
    },
    options,
  );
  serveActor(
    group,
    {
      name: "safety",
      subject: subjects.councilSafety,
      request: SafetyCouncilRequest,
      logic: fromPromise<SafetyCouncilReply, SafetyCouncilRequest>(async () => safetyCouncil()),
      reply: (output) => SafetyCouncilReply.parse(output),
    },
    options,
  );
  serveActor(
    group,
    {
      name: "voice",
      subject: subjects.voiceRender,
      request: VoiceRequest,
      logic: fromPromise<VoiceReply, VoiceRequest>(async ({ input }) => ({ text: renderOffline(input) })),
      reply: (output) => VoiceReply.parse(output),
    },
    options,
  );
}

/** The critics: every critic judges the rendered reply. */
export function serveCritics(group: ServiceGroup, options: ServeOptions = {}): void {
  serveActor(
    group,
    {
      name: "run",
      subject: subjects.criticsRun,
      request: CriticRequest,
      logic: fromPromise<CriticsReply, CriticRequest>(async ({ input }) => ({ results: runCritics(input) })),
      reply: (output) => CriticsReply.parse(output),
    },
    options,
  );
}
