/**
 * The `agents` pipeline's layer of the turn services: a turn whose
 * TURN_STARTED names the user's agents (`AgentsPipeline`) runs only them, and
 * its reply is theirs.
 */
import type { VoiceStreamPart } from "../../cognition/voice.ts";
import type { CouncilReply, CouncilRequest, VoiceReply } from "../../contracts/council.ts";
import type { AgentsPipeline } from "../../contracts/pipeline.ts";
import type { PlanWavesReply } from "../../contracts/scheduler.ts";
import { turnKey } from "../../contracts/turnKey.ts";
import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import type { TurnInterceptor } from "./turnInterceptor.ts";

/** At most this many say proposals make a direct reply: as many as a speech act has key points. */
const MAX_SAID = 8;

/**
 * Which running turns run the `agents` pipeline, learned from their
 * TURN_STARTED (recorded again, and so seen again, when a turn is taken
 * over or resumed), and the layer that runs them:
 * - the schedule is the turn's agents, in one wave (no scheduler asked);
 * - `agents` with one agent: the council is not asked; the decision says
 *   the agent's `say` proposals (a `reply` string in its output is one), in
 *   order, and the voice says them word for word, joined by a space;
 * - `agents` with several: the council decides what to say from their
 *   proposals, and the voice says its key points word for word;
 * - `agents+council`: the council and the voice as in the built-in pipeline.
 * Critics still judge the reply (they never reword it here). Every other turn
 * passes straight on.
 */
export class AgentsPipelineTurns {
  readonly #turns = new Map<string, AgentsPipeline>();

  /** Sees each event a pipeline turn records: its TURN_STARTED says whether it runs the `agents` pipeline. */
  observe(turn: { session_id: string; turn_id: number }, record: TurnRecord): void {
    if (record.kind === "TURN_STARTED" && record.payload.pipeline)
      this.#turns.set(`${turnKey(turn.session_id, turn.turn_id)}`, record.payload.pipeline);
  }

  /** The turn ended (or left this runner): forgotten. */
  ended(sessionId: string, turnId: number): void {
    this.#turns.delete(`${turnKey(sessionId, turnId)}`);
  }

  #of(request: { session_id: string; turn_id: number }): AgentsPipeline | undefined {
    return this.#turns.get(`${turnKey(request.session_id, request.turn_id)}`);
  }

  /** The layer (see the class). */
  interceptor(): TurnInterceptor {
    return {
      planWaves: async (input, next) => {
        const pipeline = this.#of(input.request);
        return pipeline ? ownWaves(pipeline, input.request.token_budget) : next(input);
      },
      decide: async (input, next) => {
        const pipeline = this.#of(input.request);
        if (!pipeline || pipeline.council || pipeline.agents.length > 1) return next(input);
        return directDecision(input.request);
      },
      renderVoice: async (input, next) => {
        const pipeline = this.#of(input.request);
        if (!pipeline || pipeline.council) return next(input);
        return sayWordForWord(input.request.speech_act.key_points, input.onStream);
      },
    };
  }
}

/** The user's agents, all in wave 0: the scheduler is not asked (it plans the built-in roster). */
function ownWaves(pipeline: AgentsPipeline, tokenBudget: number): PlanWavesReply {
  return {
    waves: [pipeline.agents],
    scores: Object.fromEntries(pipeline.agents.map((agent) => [agent, 1])),
    skipped: [],
    budget: { limit: tokenBudget, planned: 0 },
  };
}

/** One agent's answer is the reply: its say proposals, in order, as the speech act's key points. */
function directDecision(request: CouncilRequest): CouncilReply {
  const proposals = request.context.proposals;
  const says = proposals.filter((proposal) => proposal.kind === "say").map((proposal) => proposal.text);
  const doNot = proposals.filter((proposal) => proposal.kind === "do_not").map((proposal) => proposal.text);
  return {
    decision: {
      speak: says.length > 0,
      urgency: "normal",
      speech_act: { intent: "respond", key_points: says.slice(0, MAX_SAID), do_not: doNot.slice(0, MAX_SAID) },
      thinking:
        says.length > 0
          ? "pipeline agents: the agent's own answer is the reply"
          : "pipeline agents: the agent proposed nothing to say",
    },
  };
}

/** The voice of the `agents` pipeline: the key points, word for word, joined by a space, as one chunk. */
async function sayWordForWord(
  points: readonly string[],
  onStream: (part: VoiceStreamPart) => void,
): Promise<VoiceReply> {
  const text = points.join(" ");
  onStream({ type: "start", stream_id: "default", content_type: "text/plain" });
  if (text.length > 0) onStream({ type: "chunk", stream_id: "default", delta: text });
  onStream({ type: "end", stream_id: "default" });
  return { text };
}
