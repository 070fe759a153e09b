/** The LLM voice is told how the user asked to be answered (procedural memory), through the real client. */
import { describe, expect, it } from "vitest";
import type { VoiceRequest } from "../../src/contracts/council.ts";
import { llmBackend } from "../../src/llm/llmBackend.ts";
import { modelAgainst } from "./fixtures.ts";

const request = (procedures?: string[]): VoiceRequest => ({
  session_id: "s1",
  turn_id: 2,
  user_message: "How was the weekend?",
  speech_act: { intent: "connect", key_points: ["ask about the weekend"], do_not: [] },
  thinking: "",
  feedback: [],
  attempt: 1,
  ...(procedures ? { procedures } : {}),
});

describe("the LLM voice", () => {
  it("puts the user's procedures in its system prompt, and nothing when there are none", async () => {
    const { server, model } = await modelAgainst([{ content: "Short." }, { content: "Longer answer." }]);
    const backend = llmBackend(model);
    const signal = new AbortController().signal;
    await backend.render(request(["Keep answers short", "Answer in Spanish"]), () => {}, signal);
    await backend.render(request(), () => {}, signal);
    const [withProcedures, without] = server.requests.map((body) => String(body.messages[0]?.content));
    expect(withProcedures).toContain(
      "The user asked to be answered this way; follow it:\n- Keep answers short\n- Answer in Spanish",
    );
    expect(without).not.toContain("asked to be answered");
  });
});
