import type { DeliberateInput, DeliberateOutput } from "../../machines/turn.ts";
import type { AgentReply, AgentRequest } from "../contracts/agent.ts";
import type {
  CouncilDecision,
  CouncilRequest,
  SafetyCouncilReply,
  SafetyCouncilRequest,
  VoiceReply,
  VoiceRequest,
} from "../contracts/council.ts";
import type { CriticRequest, CriticsReply } from "../contracts/critic.ts";
import type {
  MemoryCommitReply,
  MemoryCommitRequest,
  MemoryRetrieveReply,
  MemoryRetrieveRequest,
} from "../contracts/memory.ts";
import type { PlanWavesReply, PlanWavesRequest } from "../contracts/scheduler.ts";
import type { Sensors } from "../contracts/workspace.ts";

/**
 * Everything a turn needs done, as plain async calls. The runner gives the
 * turn machine one implementation (`remoteTurnServices`: each call is a NATS
 * request to a worker), tests and benchmarks can give another
 * (`localTurnServices`: the same logic in-process). The machine cannot tell.
 * Every call takes an AbortSignal that fires when the stage is left.
 */
export interface TurnServices {
  senseFast(text: string): Promise<Sensors>;
  retrieveMemory(request: MemoryRetrieveRequest, signal: AbortSignal): Promise<MemoryRetrieveReply>;
  planWaves(request: PlanWavesRequest, signal: AbortSignal): Promise<PlanWavesReply>;
  callAgent(request: AgentRequest, signal: AbortSignal): Promise<AgentReply>;
  deliberate(input: DeliberateInput, signal: AbortSignal): Promise<DeliberateOutput>;
  decide(request: CouncilRequest, signal: AbortSignal): Promise<CouncilDecision>;
  safetyCouncil(request: SafetyCouncilRequest, signal: AbortSignal): Promise<SafetyCouncilReply>;
  renderVoice(request: VoiceRequest, signal: AbortSignal): Promise<VoiceReply>;
  runCritics(request: CriticRequest, signal: AbortSignal): Promise<CriticsReply>;
  commitMemory(request: MemoryCommitRequest, signal: AbortSignal): Promise<MemoryCommitReply>;
}
