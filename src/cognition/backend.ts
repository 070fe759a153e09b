import type { CouncilReply, CouncilRequest, VoiceReply, VoiceRequest } from "../contracts/council.ts";
import type { CriticReply, CriticRequest } from "../contracts/critic.ts";
import type { ChatModel } from "../contracts/model.ts";
import { ConclaveError } from "../errors.ts";
import { decide } from "./council.ts";
import { CRITICS } from "./critics.ts";
import { streamOffline, type VoiceStreamPart } from "./voice.ts";

/**
 * Where the thinking happens: the deterministic offline model, or a language
 * model (src/llm/llmBackend.ts). A worker picks one at start; the agent,
 * council, voice and critic actors call it and never know which.
 */
export interface CognitionBackend {
  /** "offline", or the model id. */
  readonly name: string;
  /** The model agents are given (`ctx.model`); absent in the offline mode, where agents answer on their own. */
  readonly model?: ChatModel;
  decide(request: CouncilRequest, signal: AbortSignal): Promise<CouncilReply>;
  render(request: VoiceRequest, emit: (part: VoiceStreamPart) => void, signal: AbortSignal): Promise<VoiceReply>;
  judge(critic: string, request: CriticRequest, signal: AbortSignal): Promise<CriticReply>;
}

/** Raised for a critic name that no backend knows. */
export class UnknownCriticError extends ConclaveError<"unknown_critic"> {
  constructor(critic: string) {
    super("unknown_critic", `no critic '${critic}'; the critics are: ${Object.keys(CRITICS).join(", ")}`);
  }
}

/** The deterministic offline model: rule paths, templates and pattern critics. Same input, same output. */
export const offlineBackend: CognitionBackend = {
  name: "offline",
  decide: async ({ context }) => ({ decision: decide(context) }),
  render: async (request, emit) => ({ text: streamOffline(request, emit) }),
  judge: async (critic, request) => {
    // Own properties only: a remote name like "constructor" must not find Object's.
    const judgeWith = Object.hasOwn(CRITICS, critic) ? CRITICS[critic] : undefined;
    if (!judgeWith) throw new UnknownCriticError(critic);
    return { result: judgeWith(request) };
  },
};
