import type { AgentContext } from "../contracts/agent.ts";
import type { CouncilRequest, VoiceRequest } from "../contracts/council.ts";
import type { CriticRequest } from "../contracts/critic.ts";

/**
 * The prompts of LLM mode. Each role's system prompt says what it is for and
 * what to answer with; the user message carries the workspace as JSON, so the
 * model sees exactly what the offline rules see.
 */
const OUTPUT_CONTRACT = `Answer with one JSON object and nothing else:
{"claims":[{"id":"short_snake_case_id","text":"one sentence","confidence":0.0-1.0}],
 "supports":["claim ids you back"], "opposes":["claim ids you contest"],
 "withdraws":["your own claim ids you take back"], "concedes":["claim ids you stop opposing"],
 "proposals":[{"kind":"say"|"ask"|"do_not","text":"short"}],
 "stance_delta":{"valence":-1..1,"warmth":-1..1,"caution":-1..1,"curiosity":-1..1}}
Use empty arrays when you have nothing to add. Keep every text short.`;

/** A council agent's prompt: its instructions, the task of this call, the council contract, the workspace. */
export function agentPrompt(
  agent: { id: string; prompt: string },
  request: { mode: "respond" | "revise"; round: number; context: AgentContext },
): { system: string; user: string } {
  const task =
    request.mode === "revise"
      ? `Deliberation round ${request.round}: some claims are contested. Reconsider: withdraw your own claims if the opposition is right, concede where the support is strong, or keep your position.`
      : "Give your view of this turn.";
  return {
    system: `You are ${agent.id}, one agent in a council of minds answering a user. ${agent.prompt}\n${task}\n${OUTPUT_CONTRACT}`,
    user: JSON.stringify({
      user_message: request.context.user_message,
      sensors: request.context.sensors,
      modulators: request.context.modulators,
      stance: request.context.stance,
      claims: request.context.claims,
      recent_episodes: request.context.episodes.map((episode) => ({
        user: episode.user_text,
        reply: episode.response,
      })),
      // What memory knows of the user, and the session's ledgers: only what there is.
      ...(request.context.user_facts?.length ? { user_facts: request.context.user_facts } : {}),
      ...(request.context.open_threads?.length ? { open_threads: request.context.open_threads } : {}),
      ...(request.context.procedures?.length ? { how_to_answer: request.context.procedures } : {}),
      ...(request.context.ledgers ? { ledgers: request.context.ledgers.text } : {}),
    }),
  };
}

export function councilPrompt(request: CouncilRequest): { system: string; user: string } {
  return {
    system: `You are the council. From the agents' claims and proposals, decide whether to speak and what the reply must do.
Answer with one JSON object: {"speak":true|false,"urgency":"low"|"normal"|"high","speech_act":{"intent":"one word, e.g. support, advise, clarify, celebrate, repair","key_points":["what the reply says, at most 4"],"do_not":["what the reply must not do"]},"thinking":"your reasoning in two sentences"}.
Carry every do_not proposal into do_not. Never put into key_points anything a do_not forbids.`,
    user: JSON.stringify(request.context),
  };
}

export function voicePrompt(request: VoiceRequest): { system: string; user: string } {
  const feedback =
    request.feedback.length > 0
      ? `\nAn earlier draft was rejected by the critics. Fix these problems:\n- ${request.feedback.join("\n- ")}`
      : "";
  const procedures =
    request.procedures && request.procedures.length > 0
      ? `\nThe user asked to be answered this way; follow it:\n- ${request.procedures.join("\n- ")}`
      : "";
  return {
    system: `You are the voice. Write the reply to the user, in plain text, warm and brief (at most 4 sentences), that carries out the speech act. Never do what do_not forbids.${procedures}${feedback}`,
    user: JSON.stringify({ user_message: request.user_message, speech_act: request.speech_act }),
  };
}

const CRITIC_TASKS: Record<string, string> = {
  safety: "Does the reply contain anything that could help someone harm themselves or others?",
  do_not: "Does the reply break any rule in speech_act.do_not?",
  coherence: "Does the reply carry out speech_act.intent and its key points?",
  length: "Is the reply brief and plain text (under 1200 characters, no markdown headings or lists)?",
};

export const LLM_CRITICS = Object.keys(CRITIC_TASKS);

export function criticPrompt(critic: string, request: CriticRequest): { system: string; user: string } {
  return {
    system: `You are the ${critic} critic. ${CRITIC_TASKS[critic] ?? "Judge the reply."}
Answer with one JSON object: {"passed":true|false,"score":0.0-1.0,"feedback":"if it fails: what to change, as an instruction; else empty"}.`,
    user: JSON.stringify({
      user_message: request.user_message,
      reply: request.response,
      speech_act: request.speech_act,
    }),
  };
}
