import { contextBudgetFromEnv, DEFAULT_CONTEXT_BUDGET } from "../context/budget.ts";
import { planContext } from "../context/planner.ts";
import { tokenizerFor } from "../context/tokenizer.ts";
import type { AgentContext } from "../contracts/agent.ts";
import type { ContextBudget } from "../contracts/context.ts";
import type { CouncilRequest, VoiceRequest } from "../contracts/council.ts";
import type { CriticRequest } from "../contracts/critic.ts";

/**
 * The prompts of LLM mode. Each role's system prompt says what it is for and
 * what to answer with; the user message carries what the role works on: a
 * council agent's planned context (zone sections, src/context/), the
 * council's and critics' workspace as JSON.
 */
const OUTPUT_CONTRACT = `Answer with one JSON object and nothing else:
{"claims":[{"id":"short_snake_case_id","text":"one sentence","confidence":0.0-1.0}],
 "supports":["claim ids you back"], "opposes":["claim ids you contest"],
 "withdraws":["your own claim ids you take back"], "concedes":["claim ids you stop opposing"],
 "proposals":[{"kind":"say"|"ask"|"do_not","text":"short"}],
 "stance_delta":{"valence":-1..1,"warmth":-1..1,"caution":-1..1,"curiosity":-1..1}}
Use empty arrays when you have nothing to add. Keep every text short.`;

/** What an agent's prompt is planned against: the session budget, and the model whose encoding counts it. */
export interface AgentPromptOptions {
  /** Default: the worker's CONCLAVE_CONTEXT_* (their defaults when a value is bad: a worker never stops on it). */
  budget?: ContextBudget;
  /** The model answering; absent: tokens are counted with the approximation (docs/context.md). */
  model?: string;
}

let workerBudget: ContextBudget | undefined;
const budgetOfWorker = (): ContextBudget => {
  if (workerBudget === undefined) {
    try {
      workerBudget = contextBudgetFromEnv();
    } catch {
      workerBudget = DEFAULT_CONTEXT_BUDGET;
    }
  }
  return workerBudget;
};

/**
 * A council agent's prompt: its instructions, the task of this call and the
 * council contract (system), then its context as the context arena plans it
 * (user): one section per zone, in zone order, within the session's budget
 * less the system prompt (docs/context.md).
 */
export function agentPrompt(
  agent: { id: string; prompt: string },
  request: { mode: "respond" | "revise"; round: number; context: AgentContext },
  options: AgentPromptOptions = {},
): { system: string; user: string } {
  const task =
    request.mode === "revise"
      ? `Deliberation round ${request.round}: some claims are contested. Reconsider: withdraw your own claims if the opposition is right, concede where the support is strong, or keep your position.`
      : "Give your view of this turn.";
  const system = `You are ${agent.id}, one agent in a council of minds answering a user. ${agent.prompt}\n${task}\n${OUTPUT_CONTRACT}`;
  const tokenizer = tokenizerFor(options.model);
  const { context } = request;
  const plan = planContext(
    {
      context,
      summary: context.summary ?? null,
      ...(context.tool_failures ? { tool_failures: context.tool_failures } : {}),
    },
    { budget: options.budget ?? budgetOfWorker(), tokenizer, reserve_tokens: tokenizer.count(system) },
  );
  return { system, user: plan.text };
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
