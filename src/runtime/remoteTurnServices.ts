import type { NatsConnection } from "@nats-io/nats-core";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import { AgentReply } from "../contracts/agent.ts";
import { CouncilDecision, SafetyCouncilReply, VoiceReply } from "../contracts/council.ts";
import { CriticsReply } from "../contracts/critic.ts";
import { MemoryCommitReply, MemoryRetrieveReply } from "../contracts/memory.ts";
import { PlanWavesReply } from "../contracts/scheduler.ts";
import { inProcessStages } from "./localTurnServices.ts";
import type { TurnServices } from "./turnServices.ts";

export interface RemoteOptions {
  /** Deadline of one request to a scheduler, council, critic or memory worker. */
  requestTimeoutMs: number;
  /** Extra time an agent request may take beyond the agent's own budget, for the hop. */
  agentGraceMs: number;
}
export const defaultRemoteOptions: RemoteOptions = { requestTimeoutMs: 5_000, agentGraceMs: 200 };

/** The turn's work done by workers over NATS request/reply, each call with a deadline. */
export function remoteTurnServices(nc: NatsConnection, options: RemoteOptions = defaultRemoteOptions): TurnServices {
  const call = <T>(
    subject: string,
    payload: unknown,
    schema: import("zod").ZodType<T>,
    signal: AbortSignal,
    timeoutMs = options.requestTimeoutMs,
  ) => requestJson(nc, subject, payload, schema, { timeoutMs, signal }) as Promise<T>;
  return {
    ...inProcessStages,
    retrieveMemory: (request, signal) => call(subjects.memoryRetrieve, request, MemoryRetrieveReply, signal),
    planWaves: (request, signal) => call(subjects.schedulerPlan, request, PlanWavesReply, signal),
    callAgent: (request, signal) =>
      call(subjects.agent(request.agent_id), request, AgentReply, signal, request.timeout_ms + options.agentGraceMs),
    decide: (request, signal) => call(subjects.councilDecide, request, CouncilDecision, signal),
    safetyCouncil: (request, signal) => call(subjects.councilSafety, request, SafetyCouncilReply, signal),
    renderVoice: (request, signal) => call(subjects.voiceRender, request, VoiceReply, signal),
    runCritics: (request, signal) => call(subjects.criticsRun, request, CriticsReply, signal),
    commitMemory: (request, signal) => call(subjects.memoryCommit, request, MemoryCommitReply, signal),
  };
}
