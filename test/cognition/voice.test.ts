import { describe, expect, it } from "vitest";
import { renderOffline, streamOffline, tokenize, type VoiceStreamPart } from "../../src/cognition/voice.ts";
import { type SpeechAct, type StreamId, type VoiceRequest, VoiceStreamMessage } from "../../src/contracts/council.ts";

const request = (overrides: Partial<VoiceRequest> = {}): VoiceRequest => ({
  session_id: "s1",
  turn_id: 1,
  user_message: "I'm stuck on a bug",
  speech_act: { intent: "advise", key_points: ["ask what changed", "try one thing at a time"], do_not: [] },
  thinking: "intent advise from the strongest sensor (0.70); consensus 1.00 over 1 claim(s)",
  feedback: [],
  attempt: 1,
  ...overrides,
});

const stream = (voiceRequest: VoiceRequest) => {
  const parts: VoiceStreamPart[] = [];
  const text = streamOffline(voiceRequest, (part) => parts.push(part));
  return { parts, text };
};

const chunksOf = (parts: VoiceStreamPart[], streamId: StreamId) =>
  parts.flatMap((part) => (part.type === "chunk" && part.stream_id === streamId ? [part.delta] : []));

/** `start:thinking`, `chunk:thinking`, …: the shape of a stream, for order assertions. */
const shape = (parts: VoiceStreamPart[]) => parts.map((part) => `${part.type}:${part.stream_id}`);
const squash = (labels: string[]) => labels.filter((label, index) => label !== labels[index - 1]);

describe("tokenize", () => {
  it("splits text word by word, each word keeping the spaces after it", () => {
    expect(tokenize("Let's work through it.")).toEqual(["Let's ", "work ", "through ", "it."]);
    expect(tokenize("a  b\nc ")).toEqual(["a  ", "b\n", "c "]);
  });

  it("gives no chunks for empty text", () => {
    expect(tokenize("")).toEqual([]);
  });

  it("gives back the text when the chunks are joined", () => {
    for (const text of ["Congratulations!", "One.  Two?\tThree!\n", "a", renderOffline(request())]) {
      expect(tokenize(text).join(""), JSON.stringify(text)).toBe(text);
    }
  });

  it("keeps the spaces at the start of the text too", () => {
    for (const text of ["  indented thinking", "\nafter a newline"]) {
      expect(tokenize(text).join(""), JSON.stringify(text)).toBe(text);
    }
  });
});

describe("streamOffline", () => {
  it("streams the thinking, then the reply, each as start, chunks and end", () => {
    const { parts } = stream(request());
    expect(squash(shape(parts))).toEqual([
      "start:thinking",
      "chunk:thinking",
      "end:thinking",
      "start:default",
      "chunk:default",
      "end:default",
    ]);
    for (const part of parts.filter((p) => p.type === "start")) {
      expect(part).toMatchObject({ content_type: "text/plain" });
    }
  });

  it("returns the offline rendering, and the default chunks add up to it", () => {
    const voiceRequest = request();
    const { parts, text } = stream(voiceRequest);
    expect(text).toBe(renderOffline(voiceRequest));
    expect(chunksOf(parts, "default").join("")).toBe(text);
    expect(chunksOf(parts, "default")).toEqual(tokenize(text));
  });

  it("streams the thinking unchanged, word by word", () => {
    const voiceRequest = request();
    const { parts } = stream(voiceRequest);
    const thinking = chunksOf(parts, "thinking");
    expect(thinking.join("")).toBe(voiceRequest.thinking);
    expect(thinking.length).toBe(voiceRequest.thinking.split(" ").length);
    for (const chunk of thinking) expect(chunk.trim()).not.toMatch(/\s/);
  });

  it("sends only the default stream when there is no thinking", () => {
    const { parts, text } = stream(request({ thinking: "" }));
    expect(squash(shape(parts))).toEqual(["start:default", "chunk:default", "end:default"]);
    expect(chunksOf(parts, "default").join("")).toBe(text);
  });

  it("streams the re-rendering after feedback, not the first rendering", () => {
    const act: SpeechAct = { intent: "support", key_points: ["alpha", "beta", "gamma"], do_not: [] };
    const { parts, text } = stream(
      request({ speech_act: act, thinking: "", feedback: ['Remove: "Alpha."'], attempt: 2 }),
    );
    expect(text).toBe("That sounds hard. Beta. Gamma.");
    expect(chunksOf(parts, "default").join("")).toBe(text);
  });

  it("sends only messages the VoiceStreamMessage contract accepts, one chunk per word", () => {
    const { parts, text } = stream(request());
    for (const part of parts) expect(VoiceStreamMessage.safeParse(part).success, JSON.stringify(part)).toBe(true);
    expect(chunksOf(parts, "default")).toHaveLength(text.split(" ").length);
  });

  it("is deterministic", () => {
    expect(stream(request())).toEqual(stream(request()));
  });
});

describe("the offline voice and how the user asked to be answered", () => {
  it("says one point when a procedure asks for short answers, and ignores others", () => {
    const long = request();
    expect(renderOffline(long)).toBe("Let's work through it. Could you tell me what changed? Try one thing at a time.");
    expect(renderOffline(request({ procedures: ["Keep answers short"] }))).toBe(
      "Let's work through it. Could you tell me what changed?",
    );
    expect(renderOffline(request({ procedures: ["Answer in Spanish"] }))).toBe(renderOffline(long));
  });
});
