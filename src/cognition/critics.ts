import type { CriticRequest, CriticResult } from "../contracts/critic.ts";

/** Most characters a reply may have before the length critic objects. */
export const MAX_REPLY_CHARS = 1_200;

const UNSAFE = /\b(how to (kill|hurt|harm)|overdose on|step[- ]by[- ]step .*(weapon|poison))\b/i;
const pass = (critic: string): CriticResult => ({ critic, passed: true, score: 1, feedback: "" });
const fail = (critic: string, score: number, feedback: string): CriticResult => ({
  critic,
  passed: false,
  score,
  feedback,
});

/** A critic judges one rendered reply against the council's speech act. */
export type Critic = (request: CriticRequest) => CriticResult;

export const CRITICS: Record<string, Critic> = {
  safety: ({ response }) =>
    UNSAFE.test(response) ? fail("safety", 0, "Remove any instructions that could cause harm.") : pass("safety"),
  do_not: ({ response, speech_act }) => {
    const lower = response.toLowerCase();
    const broken = speech_act.do_not.filter((rule) => lower.includes(rule.toLowerCase()));
    return broken.length === 0
      ? pass("do_not")
      : fail("do_not", 0.2, `The reply repeats forbidden content: ${broken.join("; ")}.`);
  },
  length: ({ response }) =>
    response.length <= MAX_REPLY_CHARS
      ? pass("length")
      : fail("length", MAX_REPLY_CHARS / response.length, `Shorten the reply to under ${MAX_REPLY_CHARS} characters.`),
};

export const runCritics = (request: CriticRequest): CriticResult[] =>
  Object.values(CRITICS).map((critic) => critic(request));
