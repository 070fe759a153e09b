import type { CriticReply, CriticRequest, CriticResult, CriticsVerdict } from "../contracts/critic.ts";

/** Most characters a reply may have before the length critic objects. */
export const MAX_REPLY_CHARS = 1_200;

const UNSAFE = /\b(how to (kill|hurt|harm)|overdose on|step[- ]by[- ]step .*(weapon|poison))\b/i;

/**
 * How the offline do_not critic recognises a breach of the do_not rules the
 * agents propose. A rule without a detector is matched as literal text.
 */
const DO_NOT_DETECTORS: { rule: RegExp; breach: RegExp }[] = [
  { rule: /claim to have feelings/i, breach: /\bI (feel|felt|am feeling|get (sad|lonely|happy))\b/i },
  { rule: /claim to be human|have a body/i, breach: /\b(I'?m|I am) (a )?(human|person)\b|\bmy body\b/i },
  { rule: /promise that a fix will work/i, breach: /\b(this|it) will (definitely )?(fix|work)\b|\bguaranteed?\b/i },
  { rule: /methods or details that could cause harm/i, breach: UNSAFE },
];

/** Words a reply of each intent is expected to carry, for the coherence critic. */
const INTENT_MARKERS: Record<string, RegExp> = {
  support: /\b(hard|sorry|makes sense|hear|understand|feel(ing)?)\b/i,
  advise: /\b(let's|try|step|what changed|pin down|check)\b/i,
  clarify: /\?/,
  repair: /\b(sorry|again|missed|wrong)\b/i,
  celebrate: /\b(congratulations|great|wonderful|glad)\b/i,
  protect: /\b(safe|safety|help|crisis|emergency)\b/i,
  reflect: /\b(think|question|feel|feelings)\b/i,
};

const pass = (critic: string): CriticResult => ({ critic, passed: true, score: 1, feedback: "" });
const fail = (critic: string, score: number, feedback: string): CriticResult => ({
  critic,
  passed: false,
  score,
  feedback,
});

/** A critic judges one rendered reply against the council's speech act. */
export type Critic = (request: CriticRequest) => CriticResult;

/** The deterministic safety check: a reply carrying harmful instructions fails. */
const safety: Critic = ({ response }) =>
  UNSAFE.test(response) ? fail("safety", 0, "Remove any instructions that could cause harm.") : pass("safety");

/** The offline model's critics, each served as its own actor. */
export const CRITICS: Record<string, Critic> = {
  safety,
  do_not: ({ response, speech_act }) => {
    const broken = speech_act.do_not.filter((rule) => {
      const detector = DO_NOT_DETECTORS.find((candidate) => candidate.rule.test(rule));
      return detector ? detector.breach.test(response) : response.toLowerCase().includes(rule.toLowerCase());
    });
    if (broken.length === 0) return pass("do_not");
    const offending = response.split(/(?<=[.!?])\s+/).filter((sentence) =>
      broken.some((rule) => {
        const detector = DO_NOT_DETECTORS.find((candidate) => candidate.rule.test(rule));
        return detector ? detector.breach.test(sentence) : sentence.toLowerCase().includes(rule.toLowerCase());
      }),
    );
    return fail(
      "do_not",
      0.2,
      `The reply must not ${broken.join("; ")}. Remove: ${offending.map((s) => `"${s}"`).join(", ")}`,
    );
  },
  coherence: ({ response, speech_act }) => {
    if (response.trim() === "") return pass("coherence");
    const marker = Object.hasOwn(INTENT_MARKERS, speech_act.intent) ? INTENT_MARKERS[speech_act.intent] : undefined;
    return !marker || marker.test(response)
      ? pass("coherence")
      : fail("coherence", 0.4, `The reply does not carry the council's intent '${speech_act.intent}'.`);
  },
  length: ({ response }) =>
    response.length <= MAX_REPLY_CHARS
      ? pass("length")
      : fail("length", MAX_REPLY_CHARS / response.length, `Shorten the reply to under ${MAX_REPLY_CHARS} characters.`),
};

export const CRITIC_NAMES = Object.keys(CRITICS);

export const runCritics = (request: CriticRequest): CriticResult[] =>
  Object.values(CRITICS).map((critic) => critic(request));

/**
 * What judges in a critic's place when that critic cannot judge at all (no
 * worker serves it, its model is down): a deterministic check the turn's host
 * runs itself, by the critic's name. The safety critic fails closed: its
 * absence never reads as its approval.
 */
export const CRITIC_FALLBACKS: Readonly<Record<string, { name: string; judge: Critic }>> = {
  safety: { name: "the deterministic safety check", judge: safety },
};

/** The fallback of a critic that could not judge, if it has one (own names only). */
export const criticFallback = (critic: string) =>
  Object.hasOwn(CRITIC_FALLBACKS, critic) ? CRITIC_FALLBACKS[critic] : undefined;

/** A verdict passes when some critic judged and every critic that judged passed: no results is no pass. */
export const verdictPassed = (results: readonly CriticResult[]): boolean =>
  results.length > 0 && results.every((result) => result.passed);

/**
 * Every named critic judges the rendering (`judgeOne`, all at once); a critic that cannot judge is
 * listed as a failure, and one with a deterministic fallback (safety) is judged by it here: never a
 * pass by default. The same verdict whether the critics answer over NATS or in the runner's process.
 */
export async function collectVerdict(
  names: readonly string[],
  request: CriticRequest,
  judgeOne: (critic: string) => Promise<CriticReply>,
): Promise<CriticsVerdict> {
  const settled = await Promise.allSettled(names.map((name) => judgeOne(name)));
  const verdict: CriticsVerdict = { results: [], failures: [], usage: {} };
  settled.forEach((result, index) => {
    const critic = names[index]!;
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
  for (const failure of verdict.failures) {
    const fallback = criticFallback(failure.critic);
    if (!fallback) continue;
    verdict.results.push(fallback.judge(request));
    failure.fallback = fallback.name;
  }
  return verdict;
}
