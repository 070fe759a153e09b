import type { InterceptedPart, VoiceStreamPart } from "../../cognition/voice.ts";
import type { AgentReply, AgentRequest, AgentStreamEvent } from "../../contracts/agent.ts";
import type {
  CouncilReply,
  CouncilRequest,
  SafetyCouncilReply,
  SafetyCouncilRequest,
  VoiceReply,
  VoiceRequest,
} from "../../contracts/council.ts";
import type { CriticRequest, CriticsVerdict } from "../../contracts/critic.ts";
import type {
  MemoryCommitReply,
  MemoryCommitRequest,
  MemoryRetrieveReply,
  MemoryRetrieveRequest,
} from "../../contracts/memory.ts";
import type { ToolApproval } from "../../contracts/recipeRun.ts";
import type { PlanWavesReply, PlanWavesRequest } from "../../contracts/scheduler.ts";
import type { DeliberateInput, DeliberateOutput, ScreenInput } from "../../contracts/turnProtocol.ts";
import type { Sensors } from "../../contracts/workspace.ts";
import type { ScreenResult } from "../interception/interceptors.ts";

/** What the request interceptors are given: the turn's `screen` actor input. */
export type ScreenRequest = ScreenInput;

/**
 * Everything a turn needs done, as plain async calls. The runner gives the
 * turn machine one implementation (`remoteTurnServices`: each call is a NATS
 * request to a worker), tests and benchmarks can give another
 * (`localTurnServices`: the same logic in-process). The machine cannot tell.
 * Every call takes an AbortSignal that fires when the stage is left.
 */
/** A tool call of an agent waits for a person's approval: the turn suspends until it is answered. */
export interface ApprovalAsked {
  approval: ToolApproval;
  prompt: string;
  required_role: string;
}

/** How one agent is asked, beyond its request. */
export interface CallAgentOptions {
  /** Tries of `request.timeout_ms` each when an answer is lost. Default 1. */
  attempts?: number | undefined;
  /** Receives the agent's named stream parts (as the response interceptors left them), all before the reply. */
  onStream?: ((part: AgentStreamEvent) => void) | undefined;
  /** Learns that one of the agent's tool calls waits for a person's approval (a pipeline agent with tools): the turn suspends. */
  onApproval?: ((asked: ApprovalAsked) => void) | undefined;
}

export interface TurnServices {
  senseFast(text: string): Promise<Sensors>;
  /** The request interceptors, on the message and the sensors' scores. */
  screen(request: ScreenRequest): Promise<ScreenResult>;
  retrieveMemory(request: MemoryRetrieveRequest, signal: AbortSignal): Promise<MemoryRetrieveReply>;
  planWaves(request: PlanWavesRequest, signal: AbortSignal): Promise<PlanWavesReply>;
  /** Asks one agent (see {@link CallAgentOptions}). */
  callAgent(request: AgentRequest, signal: AbortSignal, options?: CallAgentOptions): Promise<AgentReply>;
  deliberate(input: DeliberateInput, signal: AbortSignal): Promise<DeliberateOutput>;
  decide(request: CouncilRequest, signal: AbortSignal): Promise<CouncilReply>;
  safetyCouncil(request: SafetyCouncilRequest, signal: AbortSignal): Promise<SafetyCouncilReply>;
  /** Renders the reply, handing each stream part (start, chunk, end) to `onStream` as it is produced. */
  renderVoice(
    request: VoiceRequest,
    signal: AbortSignal,
    onStream: (part: VoiceStreamPart | InterceptedPart) => void,
  ): Promise<VoiceReply>;
  /** Every critic judges the reply; critics that cannot judge are listed as failures. */
  runCritics(request: CriticRequest, signal: AbortSignal): Promise<CriticsVerdict>;
  commitMemory(request: MemoryCommitRequest, signal: AbortSignal): Promise<MemoryCommitReply>;
}
