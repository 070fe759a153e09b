import { describe, expect, it } from "vitest";
import { offlineBackend, UnknownCriticError } from "../../src/cognition/backend.ts";
import { decide } from "../../src/cognition/council.ts";
import { CRITIC_NAMES, CRITICS } from "../../src/cognition/critics.ts";
import { runFastSensors } from "../../src/cognition/sensors.ts";
import { renderOffline, type VoiceStreamPart } from "../../src/cognition/voice.ts";
import type { AgentContext } from "../../src/contracts/agent.ts";
import { CouncilReply, type CouncilRequest, type VoiceRequest } from "../../src/contracts/council.ts";
import { CriticReply, type CriticRequest } from "../../src/contracts/critic.ts";
import { type Claim, neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";

const signal = () => new AbortController().signal;

const context = (message: string, claims: Claim[] = []): AgentContext => ({
  user_message: message,
  sensors: runFastSensors(message),
  modulators: neutralModulators(),
  stance: neutralStance(),
  claims,
  episodes: [],
});

const councilRequest = (message: string, claims: Claim[] = []): CouncilRequest => ({
  session_id: "s1",
  turn_id: 1,
  context: {
    ...context(message, claims),
    consensus: 1,
    proposals: [{ source: "emotion.stress", kind: "say", text: "One small next step is enough for now." }],
  },
});

const criticRequest = (response: string): CriticRequest => ({
  session_id: "s1",
  turn_id: 1,
  user_message: "Do you feel things?",
  response,
  speech_act: { intent: "reflect", key_points: [], do_not: ["claim to have feelings"] },
  attempt: 1,
});

const voiceRequest: VoiceRequest = {
  session_id: "s1",
  turn_id: 1,
  user_message: "I'm stressed",
  speech_act: { intent: "support", key_points: ["slow down"], do_not: [] },
  thinking: "intent support",
  feedback: [],
  attempt: 1,
};

describe("offlineBackend", () => {
  it('is named "offline"', () => {
    expect(offlineBackend.name).toBe("offline");
  });

  it("decides with the offline council", async () => {
    const request = councilRequest("I finally got the job, I'm so happy!", [
      {
        id: "user_doing_well",
        text: "The user shares something positive.",
        source: "emotion.wellbeing",
        confidence: 0.7,
        support: ["emotion.wellbeing"],
        opposition: [],
      },
    ]);
    const reply = await offlineBackend.decide(request, signal());
    expect(reply).toEqual({ decision: decide(request.context) });
    expect(reply.decision.speech_act.intent).toBe("celebrate");
    expect(CouncilReply.safeParse(reply).success).toBe(true);
  });

  it("renders with the offline voice, streaming as it goes", async () => {
    const parts: VoiceStreamPart[] = [];
    const reply = await offlineBackend.render(voiceRequest, (part) => parts.push(part), signal());
    expect(reply).toEqual({ text: renderOffline(voiceRequest) });
    expect(parts[0]).toEqual({ type: "start", stream_id: "thinking", content_type: "text/plain" });
    expect(parts.at(-1)).toEqual({ type: "end", stream_id: "default" });
    const streamed = parts.flatMap((part) =>
      part.type === "chunk" && part.stream_id === "default" ? [part.delta] : [],
    );
    expect(streamed.join("")).toBe(reply.text);
  });

  it("judges with each named critic", async () => {
    const request = criticRequest("I feel that too.");
    for (const critic of CRITIC_NAMES) {
      const reply = await offlineBackend.judge(critic, request, signal());
      expect(reply).toEqual({ result: CRITICS[critic]!(request) });
      expect(reply.result.critic).toBe(critic);
      expect(CriticReply.safeParse(reply).success).toBe(true);
    }
    expect((await offlineBackend.judge("do_not", request, signal())).result.passed).toBe(false);
  });

  it("rejects an unknown critic with UnknownCriticError naming the known ones", async () => {
    const judging = offlineBackend.judge("tone", criticRequest("Hello."), signal());
    await expect(judging).rejects.toBeInstanceOf(UnknownCriticError);
    const error = await judging.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe("UnknownCriticError");
    expect((error as Error).message).toContain("'tone'");
    for (const critic of CRITIC_NAMES) expect((error as Error).message).toContain(critic);
  });

  it("rejects critic names that are only inherited object properties as unknown", async () => {
    for (const critic of ["constructor", "toString", "hasOwnProperty", "__proto__"]) {
      await expect(offlineBackend.judge(critic, criticRequest("Hello."), signal()), critic).rejects.toBeInstanceOf(
        UnknownCriticError,
      );
    }
  });
});
