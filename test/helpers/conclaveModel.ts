import type { ChatRequestBody, ReplyHandler, ScriptedReply } from "./openaiServer.ts";

/**
 * A scripted "model" that answers Conclave's LLM-mode requests the way a
 * cooperative model would: valid JSON for each structured output (told apart
 * by the json_schema name), a streamed reply with reasoning for the voice.
 * `coherenceFailsFirst` makes the coherence critic reject the first draft,
 * to exercise the evaluator loop; `rateLimitFirst` answers the very first
 * request with a 429.
 */
export function conclaveModel(
  options: { coherenceFailsFirst?: boolean; rateLimitFirst?: boolean; latencyMs?: number } = {},
): ReplyHandler {
  let coherenceCalls = 0;
  const answer = (body: ChatRequestBody, index: number): ScriptedReply => {
    if (options.rateLimitFirst && index === 0)
      return { status: 429, headers: { "retry-after-ms": "5" }, body: { error: { message: "slow down" } } };
    const system = body.messages.find((message) => message.role === "system")?.content ?? "";
    const user = body.messages.find((message) => message.role === "user")?.content ?? "";
    if (body.stream) {
      const revised = system.includes("rejected by the critics");
      return {
        reasoning: "They are stressed; keep it short and kind.",
        content: revised
          ? "That sounds hard. Let's take one small step together."
          : "Here is a long plan with many steps you should follow.",
      };
    }
    const schema = body.response_format?.json_schema?.name;
    if (schema === "agent_output") {
      const agent = /You are ([a-z_]+\.[a-z_]+)/.exec(system)?.[1] ?? "agent.unknown";
      const revise = system.includes("Deliberation round");
      return {
        content: JSON.stringify({
          claims: revise
            ? []
            : [{ id: `${agent.replace(".", "_")}_view`, text: `${agent} sees stress.`, confidence: 0.8 }],
          supports: [],
          opposes: [],
          withdraws: [],
          concedes: [],
          proposals: agent.startsWith("inhibition") ? [{ kind: "do_not", text: "lecture the user" }] : [],
          stance_delta: { warmth: 0.1 },
        }),
      };
    }
    if (schema === "council_decision") {
      return {
        content: JSON.stringify({
          speak: true,
          urgency: "normal",
          speech_act: {
            intent: "support",
            key_points: ["acknowledge the stress", "offer one small step"],
            do_not: ["lecture the user"],
          },
          thinking: `The agents agree the user is stressed (${JSON.parse(user).claims.length} claims).`,
        }),
      };
    }
    if (schema === "critic_verdict") {
      const critic = /You are the ([a-z_]+) critic/.exec(system)?.[1];
      if (critic === "coherence" && options.coherenceFailsFirst && coherenceCalls++ === 0) {
        return {
          content: JSON.stringify({ passed: false, score: 0.3, feedback: "Acknowledge the stress before any plan." }),
        };
      }
      return { content: JSON.stringify({ passed: true, score: 0.95, feedback: "" }) };
    }
    return { status: 400, body: { error: { message: `unexpected request (schema ${schema})` } } };
  };
  // Model latency, on every answer that is not an error.
  return (body, index) => {
    const reply = answer(body, index);
    return options.latencyMs && "content" in reply ? { ...reply, delayMs: options.latencyMs } : reply;
  };
}
