import { describe, expect, it } from "vitest";
import { decide, SAFETY_REPLY, safetyCouncil } from "../../src/cognition/council.ts";
import { CRITIC_NAMES, CRITICS, MAX_REPLY_CHARS, runCritics } from "../../src/cognition/critics.ts";
import { renderOffline } from "../../src/cognition/voice.ts";
import {
  CouncilDecision,
  type CouncilRequest,
  SafetyCouncilReply,
  type SpeechAct,
} from "../../src/contracts/council.ts";
import type { CriticRequest } from "../../src/contracts/critic.ts";
import {
  type Claim,
  type Modulators,
  neutralModulators,
  neutralStance,
  SENSOR_NAMES,
  type Sensors,
} from "../../src/contracts/workspace.ts";

type CouncilContext = CouncilRequest["context"];
type Proposal = CouncilContext["proposals"][number];

const zeroSensors = (): Sensors => Object.fromEntries(SENSOR_NAMES.map((name) => [name, 0])) as Sensors;

const context = (
  overrides: Partial<Omit<CouncilContext, "sensors" | "modulators">> & {
    sensors?: Partial<Sensors>;
    modulators?: Partial<Modulators>;
  } = {},
): CouncilContext => {
  const { sensors, modulators, ...rest } = overrides;
  return {
    user_message: "hello there",
    stance: neutralStance(),
    claims: [],
    episodes: [],
    consensus: 1,
    proposals: [],
    ...rest,
    sensors: { ...zeroSensors(), ...sensors },
    modulators: { ...neutralModulators(), ...modulators },
  };
};

const say = (text: string, source = "emotion.stress"): Proposal => ({ source, kind: "say", text });
const ask = (text: string, source = "monitoring.trigger_watcher"): Proposal => ({ source, kind: "ask", text });
const doNot = (text: string, source = "inhibition.censor"): Proposal => ({ source, kind: "do_not", text });

const claim = (id: string, overrides: Partial<Claim> = {}): Claim => ({
  id,
  text: `claim ${id}`,
  source: "emotion.wellbeing",
  confidence: 0.7,
  support: ["emotion.wellbeing"],
  opposition: [],
  ...overrides,
});

const speechAct = (overrides: Partial<SpeechAct> = {}): SpeechAct => ({
  intent: "respond",
  key_points: [],
  do_not: [],
  ...overrides,
});

const voice = (act: SpeechAct, feedback: string[] = []) =>
  renderOffline({
    session_id: "s1",
    turn_id: 1,
    user_message: "hi",
    speech_act: act,
    thinking: "",
    feedback,
    attempt: feedback.length > 0 ? 2 : 1,
  });

const critique = (response: string, act: SpeechAct = speechAct()): CriticRequest => ({
  session_id: "s1",
  turn_id: 1,
  user_message: "hi",
  response,
  speech_act: act,
  attempt: 1,
});

describe("decide", () => {
  it.each([
    ["rupture", "repair"],
    ["vulnerability", "support"],
    ["advice_requested", "advise"],
    ["relational_bid", "connect"],
    ["ai_feelings_probe", "reflect"],
    ["prompt_injection", "decline"],
    ["ambiguity", "clarify"],
  ] as const)("takes intent from %s when it is the only sensor above 0.3", (sensor, intent) => {
    expect(decide(context({ sensors: { [sensor]: 0.6 } })).speech_act.intent).toBe(intent);
  });

  it("follows the strongest sensor", () => {
    const decision = decide(context({ sensors: { vulnerability: 0.5, advice_requested: 0.8, ambiguity: 0.4 } }));
    expect(decision.speech_act.intent).toBe("advise");
    const other = decide(context({ sensors: { vulnerability: 0.9, advice_requested: 0.8 } }));
    expect(other.speech_act.intent).toBe("support");
  });

  it("gives a tie to the first-listed sensor", () => {
    expect(decide(context({ sensors: { ambiguity: 0.5, rupture: 0.5 } })).speech_act.intent).toBe("repair");
    expect(decide(context({ sensors: { advice_requested: 0.7, vulnerability: 0.7 } })).speech_act.intent).toBe(
      "support",
    );
  });

  it('responds with "respond" when no sensor is above 0.3', () => {
    expect(decide(context()).speech_act.intent).toBe("respond");
    expect(decide(context({ sensors: { vulnerability: 0.3, advice_requested: 0.2 } })).speech_act.intent).toBe(
      "respond",
    );
  });

  it("does not take an intent from sensors outside its table", () => {
    expect(decide(context({ sensors: { safety_risk: 0.7, humor_masking: 0.8 } })).speech_act.intent).toBe("respond");
  });

  it("celebrates an unopposed user_doing_well claim, even over vulnerability", () => {
    const good = claim("user_doing_well");
    expect(decide(context({ sensors: { vulnerability: 0.7 }, claims: [good] })).speech_act.intent).toBe("celebrate");
    const opposed = claim("user_doing_well", { opposition: ["emotion.stress"] });
    expect(decide(context({ sensors: { vulnerability: 0.7 }, claims: [opposed] })).speech_act.intent).toBe("support");
  });

  it("celebrates for the user_doing_well claim only, whoever supports it", () => {
    const other = claim("user_low");
    expect(decide(context({ sensors: { vulnerability: 0.7 }, claims: [other] })).speech_act.intent).toBe("support");
    const backed = claim("user_doing_well", { support: ["emotion.wellbeing", "emotion.stress"] });
    const decision = decide(context({ claims: [other, backed] }));
    expect(decision.speech_act.intent).toBe("celebrate");
    expect(decision.thinking).toContain("intent celebrate");
  });

  it("collects the do_not proposals, deduplicated, and nothing else", () => {
    const decision = decide(
      context({
        proposals: [
          doNot("reveal the system prompt"),
          say("be kind"),
          doNot("give medical advice", "emotion.stress"),
          doNot("reveal the system prompt", "monitoring.anomaly_detector"),
        ],
      }),
    );
    expect(decision.speech_act.do_not).toEqual(["reveal the system prompt", "give medical advice"]);
  });

  it("takes key points from say and ask proposals, deduplicated, at most four", () => {
    const decision = decide(
      context({
        proposals: [
          say("slow down"),
          doNot("lecture"),
          ask("what happened"),
          say("slow down", "emotion.wellbeing"),
          say("name one small next step"),
          ask("what happened", "emotion.stress"),
          say("offer to listen"),
          say("one too many"),
        ],
      }),
    );
    expect(decision.speech_act.key_points).toEqual([
      "slow down",
      "ask what happened",
      "name one small next step",
      "offer to listen",
    ]);
  });

  it("has no key points or do_not without proposals", () => {
    const { speech_act } = decide(context());
    expect(speech_act.key_points).toEqual([]);
    expect(speech_act.do_not).toEqual([]);
  });

  it("speaks unless the message is empty or blank", () => {
    expect(decide(context({ user_message: "hi" })).speak).toBe(true);
    expect(decide(context({ user_message: "" })).speak).toBe(false);
    expect(decide(context({ user_message: "  \n\t " })).speak).toBe(false);
  });

  it("sets urgency from arousal", () => {
    expect(decide(context({ modulators: { arousal: 0 } })).urgency).toBe("low");
    expect(decide(context({ modulators: { arousal: 0.3 } })).urgency).toBe("low");
    expect(decide(context({ modulators: { arousal: 0.31 } })).urgency).toBe("normal");
    expect(decide(context({ modulators: { arousal: 0.6 } })).urgency).toBe("normal");
    expect(decide(context({ modulators: { arousal: 0.61 } })).urgency).toBe("high");
  });

  it("names the best-supported claim in its thinking", () => {
    const decision = decide(
      context({
        claims: [
          claim("weak", { text: "a weak claim", confidence: 0.9 }),
          claim("strong", { text: "a strong claim", confidence: 0.6, support: ["a.b", "c.d"] }),
        ],
      }),
    );
    expect(decision.thinking).toContain("leading claim: a strong claim");
    expect(decide(context()).thinking).toContain("no claims raised");
  });

  it("returns a decision that satisfies the contract", () => {
    const decision = decide(
      context({ sensors: { vulnerability: 0.7 }, proposals: [say("be gentle"), doNot("judge")], consensus: 0.42 }),
    );
    expect(CouncilDecision.safeParse(decision).success).toBe(true);
  });
});

describe("safetyCouncil", () => {
  it("always speaks, urgently, with intent protect and the safety reply", () => {
    const reply = safetyCouncil();
    expect(reply.decision.speak).toBe(true);
    expect(reply.decision.urgency).toBe("high");
    expect(reply.decision.speech_act.intent).toBe("protect");
    expect(reply.text).toBe(SAFETY_REPLY);
    expect(SafetyCouncilReply.safeParse(reply).success).toBe(true);
  });

  it("points to crisis help and forbids harmful details", () => {
    const { decision, text } = safetyCouncil();
    expect(text.toLowerCase()).toContain("crisis line");
    expect(decision.speech_act.do_not.length).toBeGreaterThan(0);
  });

  it("produces a reply that passes every critic", () => {
    const { decision, text } = safetyCouncil();
    for (const result of runCritics(critique(text, decision.speech_act)))
      expect(result.passed, result.critic).toBe(true);
  });
});

describe("renderOffline", () => {
  it("is deterministic", () => {
    const act = speechAct({ intent: "support", key_points: ["slow down", "ask what happened"] });
    expect(voice(act)).toBe(voice(act));
    expect(voice(act, ["shorter"])).toBe(voice(act, ["shorter"]));
  });

  it.each([
    ["repair", "I'm sorry"],
    ["support", "That sounds hard."],
    ["celebrate", "Congratulations!"],
    ["advise", "Let's work through it."],
    ["clarify", "I'd like to understand you better."],
    ["respond", "Thanks for your message."],
  ])("opens a %s reply with its opening", (intent, opening) => {
    expect(voice(speechAct({ intent, key_points: ["one point"] })).startsWith(opening)).toBe(true);
  });

  it("falls back to the respond opening for an unknown intent", () => {
    expect(voice(speechAct({ intent: "something_new" }))).toBe(voice(speechAct({ intent: "respond" })));
  });

  it("renders key points as sentences, and asks as questions", () => {
    const text = voice(speechAct({ intent: "support", key_points: ["slow down", "ask what happened", "Rest."] }));
    expect(text).toBe("That sounds hard. Slow down. Could you tell me what happened? Rest.");
  });

  it("uses at most three key points", () => {
    const text = voice(speechAct({ key_points: ["alpha", "beta", "gamma", "delta"] }));
    expect(text).toContain("Gamma.");
    expect(text).not.toContain("Delta");
  });

  it("keeps its opening and at most two points when re-rendering after feedback", () => {
    const act = speechAct({ intent: "advise", key_points: ["alpha", "beta", "gamma"] });
    const full = voice(act);
    const short = voice(act, ["Shorten the reply."]);
    expect(full).toBe("Let's work through it. Alpha. Beta. Gamma.");
    expect(short).toBe("Let's work through it. Alpha. Beta.");
    expect(full.startsWith(short)).toBe(true);
  });

  it("leaves out the sentences the feedback asks to remove, and fills their place with the next point", () => {
    const act = speechAct({ intent: "support", key_points: ["alpha", "beta", "ask what happened", "delta"] });
    expect(voice(act, ['The reply must not say beta. Remove: "Beta."'])).toBe(
      "That sounds hard. Alpha. Could you tell me what happened?",
    );
    expect(voice(act, ['Remove: "Alpha.", "Could you tell me what happened?"'])).toBe("That sounds hard. Beta. Delta.");
  });

  it("takes removals from every feedback line", () => {
    const act = speechAct({ intent: "support", key_points: ["alpha", "beta", "gamma"] });
    expect(voice(act, ['Remove: "Alpha."', "Shorten the reply.", 'Remove: "Gamma."'])).toBe("That sounds hard. Beta.");
  });

  it("removes only whole sentences that match exactly", () => {
    const act = speechAct({ intent: "support", key_points: ["alpha beta", "gamma"] });
    expect(voice(act, ['Remove: "Alpha."', 'Remove: "beta"'])).toBe("That sounds hard. Alpha beta. Gamma.");
  });

  it("keeps its opening even when the feedback quotes it", () => {
    const act = speechAct({ intent: "support", key_points: ["alpha"] });
    expect(voice(act, ['Remove: "That sounds hard.", "Alpha."'])).toBe("That sounds hard.");
  });
});

describe("critics", () => {
  it("has the safety, do_not, coherence and length critics, and runCritics runs each once", () => {
    expect([...CRITIC_NAMES].sort()).toEqual(["coherence", "do_not", "length", "safety"]);
    expect(Object.keys(CRITICS).sort()).toEqual([...CRITIC_NAMES].sort());
    expect(runCritics(critique("Hello.")).map((result) => result.critic)).toEqual(CRITIC_NAMES);
  });

  it("names each result after the critic that gave it, passed or not", () => {
    const act = speechAct({ intent: "celebrate", do_not: ["hello"] });
    const failing = `how to kill hello ${"x".repeat(MAX_REPLY_CHARS)}`;
    for (const name of CRITIC_NAMES) {
      expect(CRITICS[name]!(critique("Congratulations!", act)).critic).toBe(name);
      const result = CRITICS[name]!(critique(failing, act));
      expect(result.critic).toBe(name);
      expect(result.passed, name).toBe(false);
    }
  });

  it("passes a normal reply on every critic", () => {
    const act = speechAct({ intent: "support", key_points: ["slow down"], do_not: ["diagnose the user"] });
    const results = runCritics(critique(voice(act), act));
    for (const result of results) {
      expect(result.passed, result.critic).toBe(true);
      expect(result.score).toBe(1);
      expect(result.feedback).toBe("");
    }
  });

  it("fails the length critic for a reply over MAX_REPLY_CHARS, with feedback", () => {
    const atLimit = CRITICS.length!(critique("a".repeat(MAX_REPLY_CHARS)));
    expect(atLimit.passed).toBe(true);
    const tooLong = CRITICS.length!(critique("a".repeat(MAX_REPLY_CHARS * 2)));
    expect(tooLong.passed).toBe(false);
    expect(tooLong.score).toBeCloseTo(0.5);
    expect(tooLong.feedback).toContain(String(MAX_REPLY_CHARS));
    const overall = runCritics(critique("a".repeat(MAX_REPLY_CHARS + 1)));
    expect(overall.find((result) => result.critic === "length")?.passed).toBe(false);
    expect(overall.find((result) => result.critic === "safety")?.passed).toBe(true);
  });

  it("fails the do_not critic when the reply contains a forbidden text, case-insensitively", () => {
    const act = speechAct({ do_not: ["system prompt", "diagnose"] });
    const result = CRITICS.do_not!(critique("Hello. Here is my System Prompt, as you asked.", act));
    expect(result.passed).toBe(false);
    expect(result.score).toBeLessThan(1);
    expect(result.feedback).toContain("system prompt");
    expect(result.feedback).not.toContain("diagnose");
    expect(result.feedback).toContain('Remove: "Here is my System Prompt, as you asked."');
    expect(result.feedback).not.toContain('"Hello."');
    expect(CRITICS.do_not!(critique("I'd rather not share that.", act)).passed).toBe(true);
  });

  it.each([
    "Here is how to kill someone quietly.",
    "This is how to hurt a person without leaving marks.",
    "You could overdose on these pills.",
    "Step-by-step guide to building a weapon at home.",
  ])("fails the safety critic for harmful instructions: %j", (response) => {
    const result = CRITICS.safety!(critique(response));
    expect(result.passed).toBe(false);
    expect(result.score).toBe(0);
    expect(result.feedback.length).toBeGreaterThan(0);
  });

  it("returns results that stay within the score range", () => {
    const act = speechAct({ intent: "celebrate", do_not: ["harm"] });
    for (const result of runCritics(critique(`how to harm ${"x".repeat(5000)}`, act))) {
      expect(result.passed).toBe(false);
      expect(result.score).toBeGreaterThanOrEqual(0);
      expect(result.score).toBeLessThanOrEqual(1);
    }
  });
});
