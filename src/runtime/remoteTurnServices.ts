import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import { RemoteCallError } from "../bus/errors.ts";
import { requestJson, requestStream } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import { CRITIC_NAMES } from "../cognition/critics.ts";
import { SEED_SENSORS, type SensorOptions } from "../cognition/sensors.ts";
import { AgentReply } from "../contracts/agent.ts";
import { CouncilReply, SafetyCouncilReply, VoiceStreamMessage } from "../contracts/council.ts";
import { CriticReply, type CriticsVerdict } from "../contracts/critic.ts";
import { MemoryCommitReply, MemoryRetrieveReply } from "../contracts/memory.ts";
import { PlanWavesReply } from "../contracts/scheduler.ts";
import type { Usage } from "../contracts/usage.ts";
import { deliberateRound } from "./deliberate.ts";
import { passThroughScreen } from "./interception/intercepted.ts";
import { senseFastWith } from "./localTurnServices.ts";
import type { TurnServices } from "./turnServices.ts";

export interface RemoteOptions {
  /** Deadline of one request to a scheduler, council, critic or memory worker. Default 5 s. */
  requestTimeoutMs: number;
  /** Deadline of a whole voice rendering (streamed). Default 30 s. */
  voiceTimeoutMs: number;
  /** Extra time an agent request may take beyond the agent's own budget, for the hop. Default 200 ms. */
  agentGraceMs: number;
  /** The critics every reply goes to (each served on conclave.critic.<name>). Default: the roster's. */
  critics: readonly string[];
  /** Deviations from the seed's fast sensors (docs/SENSORS.md). Default: none, the seed's sensors. */
  sensors: SensorOptions;
}
export const defaultRemoteOptions: RemoteOptions = {
  requestTimeoutMs: 5_000,
  voiceTimeoutMs: 30_000,
  agentGraceMs: 200,
  critics: CRITIC_NAMES,
  sensors: SEED_SENSORS,
};

/** The turn's work done by workers over NATS request/reply, each call with a deadline. */
export function remoteTurnServices(nc: NatsConnection, options: Partial<RemoteOptions> = {}): TurnServices {
  const settings = { ...defaultRemoteOptions, ...options };
  const call = <S extends z.ZodType>(
    subject: string,
    payload: unknown,
    schema: S,
    signal: AbortSignal,
    timeoutMs = settings.requestTimeoutMs,
  ) => requestJson(nc, subject, payload, schema, { timeoutMs, signal });
  const callAgent: TurnServices["callAgent"] = async (request, signal, attempts = 1) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call(
          subjects.agent(request.agent_id),
          request,
          AgentReply,
          signal,
          request.timeout_ms + settings.agentGraceMs,
        );
      } catch (error) {
        // A timeout is an answer lost (its worker died, or is stuck): the queue group sends the retry elsewhere.
        const lost = error instanceof RemoteCallError && error.code === "timeout";
        if (!lost || attempt >= attempts || signal.aborted) throw error;
      }
    }
  };
  return {
    senseFast: senseFastWith(settings.sensors),
    screen: passThroughScreen,
    callAgent,
    deliberate: (input, signal) => deliberateRound(input, callAgent, signal),
    retrieveMemory: (request, signal) => call(subjects.memoryRetrieve, request, MemoryRetrieveReply, signal),
    planWaves: (request, signal) => call(subjects.schedulerPlan, request, PlanWavesReply, signal),
    decide: (request, signal) => call(subjects.councilDecide, request, CouncilReply, signal),
    safetyCouncil: (request, signal) => call(subjects.councilSafety, request, SafetyCouncilReply, signal),
    renderVoice: async (request, signal, onStream) => {
      let done: { text: string; usage?: Usage } | null = null;
      await requestStream(
        nc,
        subjects.voiceRender,
        request,
        VoiceStreamMessage,
        (message) => {
          if (message.type === "done") done = message;
          else if (message.type === "error")
            throw new RemoteCallError(subjects.voiceRender, "internal", message.message);
          else onStream(message);
        },
        { timeoutMs: settings.voiceTimeoutMs, signal },
      );
      if (!done)
        throw new RemoteCallError(subjects.voiceRender, "internal", "the voice closed its stream without a reply");
      return done;
    },
    runCritics: async (request, signal) => {
      const settled = await Promise.allSettled(
        settings.critics.map((name) => call(subjects.critic(name), request, CriticReply, signal)),
      );
      const verdict: CriticsVerdict = { results: [], failures: [], usage: {} };
      settled.forEach((result, index) => {
        const critic = settings.critics[index]!;
        if (result.status === "fulfilled") {
          verdict.results.push(result.value.result);
          if (result.value.usage) verdict.usage[`critic:${critic}`] = result.value.usage;
        } else {
          const error = result.reason as { code?: string; message?: string };
          verdict.failures.push({
            critic,
            code: error.code ?? "internal",
            message: error.message ?? String(result.reason),
          });
        }
      });
      return verdict;
    },
    commitMemory: (request, signal) => call(subjects.memoryCommit, request, MemoryCommitReply, signal),
  };
}
