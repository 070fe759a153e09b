import { fromPromise } from "xstate";
import { councilMachine } from "../../machines/council.ts";
import { criticMachine } from "../../machines/critic.ts";
import { schedulerMachine } from "../../machines/scheduler.ts";
import type { AgentDirectory } from "../agents/directory.ts";
import { HandlerError } from "../bus/errors.ts";
import { type ServeOptions, serveActor, serveFunction } from "../bus/serveActor.ts";
import type { ServiceGroup } from "../bus/service.ts";
import { subjects } from "../bus/subjects.ts";
import type { CognitionBackend } from "../cognition/backend.ts";
import { safetyCouncil } from "../cognition/council.ts";
import type { VoiceStreamPart } from "../cognition/voice.ts";
import {
  CouncilReply,
  CouncilRequest,
  SafetyCouncilRequest,
  VoiceReply,
  VoiceRequest,
  type VoiceStreamMessage,
} from "../contracts/council.ts";
import { CriticReply, CriticRequest } from "../contracts/critic.ts";
import { PlanWavesReply, PlanWavesRequest } from "../contracts/scheduler.ts";
import type { CooldownStore } from "../runtime/cooldownStore.ts";

/**
 * The scheduler actor: plans the turn's waves from the live roster (the
 * agents running workers announce), with the session's cooldowns kept in KV.
 */
export function serveScheduler(
  group: ServiceGroup,
  cooldowns: CooldownStore,
  directory: Pick<AgentDirectory, "roster">,
  options: ServeOptions = {},
): void {
  const logic = schedulerMachine.provide({
    actors: {
      loadCooldowns: fromPromise(({ input }) => cooldowns.load(input.session_id)),
      saveCooldowns: fromPromise(({ input }) => cooldowns.save(input.session_id, input.cooldowns)),
    },
  });
  serveActor(
    group,
    {
      name: "plan",
      subject: subjects.schedulerPlan,
      request: PlanWavesRequest,
      // The machine reads no clock: the host stamps the request's time.
      logic: logic,
      input: (request) => ({ request, manifests: directory.roster(), now: Date.now() }),
      reply: (output) => PlanWavesReply.parse(output.reply),
    },
    options,
  );
}

/** The council actor (decision and safety interrupt). The safety council is deterministic in every mode. */
export function serveCouncil(group: ServiceGroup, backend: CognitionBackend, options: ServeOptions = {}): void {
  serveActor(
    group,
    {
      name: "decide",
      subject: subjects.councilDecide,
      request: CouncilRequest,
      // One decision per turn: a runner that took the turn over joins the one under way.
      stepKey: (request) => `${request.session_id}.council.${request.turn_id}`,
      logic: councilMachine.provide({
        actors: { decide: fromPromise(({ input, signal }) => backend.decide(input, signal)) },
      }),
      reply: (output) => {
        if (output.status === "failed" || !output.reply)
          throw new HandlerError("agent_failed", `council: ${output.error}`);
        return CouncilReply.parse(output.reply);
      },
    },
    options,
  );
  serveFunction(
    group,
    {
      name: "safety",
      subject: subjects.councilSafety,
      request: SafetyCouncilRequest,
      handle: async () => safetyCouncil(),
    },
    options,
  );
}

/** The voice: renders the speech act, streaming each part as it is produced, then the whole reply. */
export function serveVoice(group: ServiceGroup, backend: CognitionBackend, options: ServeOptions = {}): void {
  serveActor(
    group,
    {
      name: "voice",
      subject: subjects.voiceRender,
      request: VoiceRequest,
      logic: fromPromise<VoiceReply, VoiceRequest, VoiceStreamPart>(({ input, signal, emit }) =>
        backend.render(input, emit, signal),
      ),
      stream: (part) => part as VoiceStreamMessage,
      reply: (output): VoiceStreamMessage => ({ type: "done", ...VoiceReply.parse(output) }),
      timeoutMs: () => 60_000,
    },
    options,
  );
}

/** Each critic is its own actor, on conclave.critic.<name>. */
export function serveCritics(
  group: ServiceGroup,
  backend: CognitionBackend,
  names: readonly string[],
  options: ServeOptions = {},
): void {
  const logic = criticMachine.provide({
    actors: { judge: fromPromise(({ input, signal }) => backend.judge(input.critic, input.request, signal)) },
  });
  for (const critic of names) {
    serveActor(
      group,
      {
        name: critic,
        subject: subjects.critic(critic),
        request: CriticRequest,
        // One verdict per critic and rendering of a turn.
        stepKey: (request) => `${request.session_id}.critic.${critic}.${request.turn_id}.${request.attempt}`,
        logic,
        input: (request) => ({ critic, request }),
        reply: (output) => {
          if (output.status === "errored" || !output.reply)
            throw new HandlerError("agent_failed", `critic ${critic}: ${output.error}`);
          return CriticReply.parse(output.reply);
        },
      },
      options,
    );
  }
}
