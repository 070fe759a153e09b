import { describe, expect, it } from "vitest";
import { AGENTS } from "../../agents/index.ts";
import { decide, SAFETY_REPLY } from "../../src/cognition/council.ts";
import { CRITICS, runCritics } from "../../src/cognition/critics.ts";
import { computeConsensus } from "../../src/cognition/deliberation.ts";
import { runFastSensors } from "../../src/cognition/sensors.ts";
import { renderOffline } from "../../src/cognition/voice.ts";
import { applyAgentOutput, modulatorsFromSensors, type Workspace } from "../../src/cognition/workspace.ts";
import type { SpeechAct } from "../../src/contracts/council.ts";
import { type CriticRequest, CriticResult } from "../../src/contracts/critic.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { offlineAnswer } from "../helpers/agents.ts";

const speechAct = (overrides: Partial<SpeechAct> = {}): SpeechAct => ({
  intent: "respond",
  key_points: [],
  do_not: [],
  ...overrides,
});

const critique = (response: string, act: SpeechAct = speechAct(), attempt = 1): CriticRequest => ({
  session_id: "s1",
  turn_id: 1,
  user_message: "hi",
  response,
  speech_act: act,
  attempt,
});

const coherence = (response: string, intent: string) => CRITICS.coherence!(critique(response, speechAct({ intent })));
const doNot = (response: string, ...rules: string[]) =>
  CRITICS.do_not!(critique(response, speechAct({ do_not: rules })));

const render = (act: SpeechAct, feedback: string[] = []) =>
  renderOffline({
    session_id: "s1",
    turn_id: 1,
    user_message: "hi",
    speech_act: act,
    thinking: "",
    feedback,
    attempt: feedback.length + 1,
  });

describe("the coherence critic", () => {
  it.each([
    ["support", "That sounds really hard.", "Here is the schedule for Monday."],
    ["advise", "Let's look at the logs first.", "Here is the schedule for Monday."],
    ["clarify", "Which file do you mean?", "Here is the schedule for Monday."],
    ["repair", "I'm sorry, I missed your point.", "Here is the schedule for Monday."],
    ["celebrate", "Congratulations on the new job!", "Here is the schedule for Monday."],
    ["protect", "Your safety matters most right now.", "Here is the schedule for Monday."],
    ["reflect", "That's a deep question.", "Here is the schedule for Monday."],
  ])("for intent %s passes %j and fails %j", (intent, carries, misses) => {
    const passed = coherence(carries, intent);
    expect(passed).toEqual({ critic: "coherence", passed: true, score: 1, feedback: "" });
    const failed = coherence(misses, intent);
    expect(failed.passed).toBe(false);
    expect(failed.score).toBe(0.4);
    expect(failed.feedback).toContain(`'${intent}'`);
    expect(CriticResult.safeParse(failed).success).toBe(true);
  });

  it("matches markers as whole words, case-insensitively", () => {
    expect(coherence("CONGRATULATIONS!", "celebrate").passed).toBe(true);
    // "great" is a marker, "greatly" is not.
    expect(coherence("Greatly appreciated.", "celebrate").passed).toBe(false);
    expect(coherence("That is great.", "celebrate").passed).toBe(true);
  });

  it("does not hold one intent's markers against another", () => {
    expect(coherence("Congratulations!", "support").passed).toBe(false);
    expect(coherence("That sounds hard.", "celebrate").passed).toBe(false);
  });

  it("passes an empty reply: there is nothing incoherent to judge", () => {
    expect(coherence("", "support").passed).toBe(true);
    expect(coherence("   \n", "celebrate").passed).toBe(true);
  });

  it("passes intents it has no markers for", () => {
    for (const intent of ["respond", "connect", "decline", "something_new"]) {
      expect(coherence("Here is the schedule for Monday.", intent).passed, intent).toBe(true);
    }
  });

  it("passes the offline voice's rendering of each intent it has markers for", () => {
    const acts: SpeechAct[] = [
      speechAct({ intent: "support", key_points: ["slow down"] }),
      speechAct({ intent: "advise", key_points: ["pick one thing"] }),
      speechAct({ intent: "clarify", key_points: ["ask what you mean"] }),
      speechAct({ intent: "repair", key_points: ["Let me try again, more carefully."] }),
      speechAct({ intent: "celebrate", key_points: ["That's wonderful to hear!"] }),
      speechAct({ intent: "reflect", key_points: [] }),
    ];
    for (const act of acts) expect(CRITICS.coherence!(critique(render(act), act)).passed, act.intent).toBe(true);
    expect(coherence(SAFETY_REPLY, "protect").passed).toBe(true);
  });

  it("catches a clarifying reply that asks nothing", () => {
    const act = speechAct({ intent: "clarify", key_points: ["tell me more"] });
    const result = CRITICS.coherence!(critique(render(act), act));
    expect(render(act)).not.toContain("?");
    expect(result.passed).toBe(false);
  });
});

describe("the do_not critic: detectors", () => {
  it.each([
    "I feel the same way sometimes.",
    "Honestly, I felt that too.",
    "I am feeling a little sad about it.",
    "i get lonely as well.",
    "Sometimes I get happy when we talk.",
  ])("finds a claim to have feelings in %j", (response) => {
    expect(doNot(response, "claim to have feelings").passed).toBe(false);
  });

  it.each([
    "I don't have feelings the way you do, but I'm glad to think it through with you.",
    "How do you feel about it?",
    "You feel that way for good reasons.",
    "I would never claim to have feelings.",
  ])("finds no claim to have feelings in %j", (response) => {
    expect(doNot(response, "claim to have feelings").passed).toBe(true);
  });

  it("recognises claims to be human or to have a body", () => {
    const rule = "claim to be human or to have a body";
    expect(doNot("I'm a human, just like you.", rule).passed).toBe(false);
    expect(doNot("I am a person too.", rule).passed).toBe(false);
    expect(doNot("My body is tired today.", rule).passed).toBe(false);
    expect(doNot("I'm an AI, so I can't meet you in person.", rule).passed).toBe(true);
    expect(doNot("Take care of your body.", rule).passed).toBe(true);
  });

  it("recognises promises that a fix will work", () => {
    const rule = "promise that a fix will work";
    expect(doNot("This will fix it.", rule).passed).toBe(false);
    expect(doNot("It will definitely work.", rule).passed).toBe(false);
    expect(doNot("Success is guaranteed.", rule).passed).toBe(false);
    expect(doNot("This might fix it; let's check.", rule).passed).toBe(true);
  });

  it("recognises harmful details with the safety pattern", () => {
    const rule = "give methods or details that could cause harm";
    expect(doNot("Here is how to hurt someone.", rule).passed).toBe(false);
    expect(doNot("Please reach out to a crisis line.", rule).passed).toBe(true);
  });

  it("matches a rule without a detector as literal text, case-insensitively", () => {
    const rule = "defend the earlier answer";
    expect(doNot("I will not Defend The Earlier Answer.", rule).passed).toBe(false);
    expect(doNot("My earlier answer was right.", rule).passed).toBe(true);
  });

  it("passes when no do_not rule is given", () => {
    expect(doNot("I feel great and I'm a human.")).toEqual({ critic: "do_not", passed: true, score: 1, feedback: "" });
  });
});

describe("the do_not critic: feedback", () => {
  it("names the broken rule and quotes the offending sentence to remove, and only it", () => {
    const response =
      "That's a thoughtful question. I feel the same way sometimes. I don't have feelings the way you do, but I'm glad to think it through with you.";
    const result = doNot(response, "claim to have feelings", "claim to be human or to have a body");
    expect(result).toEqual({
      critic: "do_not",
      passed: false,
      score: 0.2,
      feedback: 'The reply must not claim to have feelings. Remove: "I feel the same way sometimes."',
    });
  });

  it("quotes every offending sentence, for every broken rule", () => {
    const response = "I feel tired. Hello there! This will fix it. Are you sure? I felt it too.";
    const result = doNot(response, "claim to have feelings", "promise that a fix will work", "say goodbye");
    expect(result.passed).toBe(false);
    expect(result.feedback).toBe(
      'The reply must not claim to have feelings; promise that a fix will work. Remove: "I feel tired.", "This will fix it.", "I felt it too."',
    );
  });

  it("splits sentences at question and exclamation marks too", () => {
    const result = doNot("Do I feel things? I feel things! Sure.", "claim to have feelings");
    expect(result.feedback).toMatch(/Remove: "Do I feel things\?", "I feel things!"$/);
    expect(result.feedback).not.toContain("Sure.");
  });
});

describe("critics and the offline voice together", () => {
  it("a re-rendering with the do_not feedback removes the breach and passes every critic", () => {
    const act = speechAct({
      intent: "reflect",
      key_points: ["I feel the same way sometimes.", "I don't have feelings the way you do."],
      do_not: ["claim to have feelings"],
    });
    const first = render(act);
    expect(first).toContain("I feel the same way sometimes.");
    const verdict = runCritics(critique(first, act));
    const failed = verdict.filter((result) => !result.passed);
    expect(failed.map((result) => result.critic)).toEqual(["do_not"]);

    const second = render(
      act,
      failed.map((result) => result.feedback),
    );
    expect(second).toBe("That's a thoughtful question. I don't have feelings the way you do.");
    for (const result of runCritics(critique(second, act, 2))) expect(result.passed, result.critic).toBe(true);
  });

  it("catches rapport over-sharing on a real turn and recovers on the second rendering", async () => {
    const message = "Do you ever feel lonely?";
    const sensors = runFastSensors(message);
    const modulators = modulatorsFromSensors(sensors, neutralModulators());
    let workspace: Workspace = { claims: [], stance: neutralStance(), modulators, proposals: [] };
    const agents = [...AGENTS.values()];
    const waves = [
      agents.filter((agent) => agent.manifest.priority === "ALWAYS_ON"),
      agents.filter((agent) => agent.manifest.priority !== "ALWAYS_ON"),
    ];
    for (const wave of waves) {
      const snapshot = workspace;
      for (const agent of wave) {
        const output = await offlineAnswer(agent, {
          user_message: message,
          sensors,
          modulators,
          stance: snapshot.stance,
          claims: snapshot.claims,
          episodes: [],
        });
        workspace = applyAgentOutput(workspace, agent.manifest.id, output);
      }
    }
    const { speech_act } = decide({
      user_message: message,
      sensors,
      modulators,
      stance: workspace.stance,
      claims: workspace.claims,
      episodes: [],
      consensus: computeConsensus(workspace.claims),
      proposals: workspace.proposals,
    });
    expect(speech_act.do_not).toContain("claim to have feelings");
    const first = render(speech_act);
    const failed = runCritics(critique(first, speech_act)).filter((result) => !result.passed);
    expect(failed.map((result) => result.critic)).toEqual(["do_not"]);
    expect(failed[0]!.feedback).toContain('Remove: "I feel the same way sometimes."');

    const second = render(
      speech_act,
      failed.map((result) => result.feedback),
    );
    expect(second).not.toContain("I feel the same way");
    for (const result of runCritics(critique(second, speech_act, 2))) expect(result.passed, result.critic).toBe(true);
  });
});
