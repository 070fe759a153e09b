import { z } from "zod";
import type { CognitionBackend } from "../cognition/backend.ts";
import { UnknownCriticError } from "../cognition/backend.ts";
import { tokenize } from "../cognition/voice.ts";
import { CouncilDecision } from "../contracts/council.ts";
import type { ChatModel, Usage } from "../contracts/model.ts";
import { councilPrompt, criticPrompt, LLM_CRITICS, voicePrompt } from "./prompts.ts";

const Verdict = z.object({ passed: z.boolean(), score: z.number().min(0).max(1), feedback: z.string() });

/**
 * LLM mode: agents (through `ctx.model`), council and critics answer through structured outputs
 * validated by their zod schemas (an invalid reply is retried once, then is
 * that actor's failure); the voice streams the model's tokens, its reasoning
 * (when the server sends any) on the `thinking` stream.
 */
export function llmBackend(model: ChatModel): CognitionBackend {
  // Each call's usage names the model it ran on: cost prices it by that (docs/cost.md).
  const onModel = (usage: Usage): Usage => ({ ...usage, model: model.model });
  return {
    name: model.model,
    model,
    decide: async (request, signal) => {
      const { value, usage } = await model.structured({
        caller: "council",
        ...councilPrompt(request),
        schema: CouncilDecision,
        schemaName: "council_decision",
        signal,
      });
      return { decision: value, usage: onModel(usage) };
    },
    render: async (request, emit, signal) => {
      const stream = model.stream({ caller: "voice", ...voicePrompt(request), signal });
      let text = "";
      let open: "thinking" | "default" | null = null;
      const switchTo = (streamId: "thinking" | "default") => {
        if (open === streamId) return;
        if (open) emit({ type: "end", stream_id: open });
        emit({ type: "start", stream_id: streamId, content_type: "text/plain" });
        open = streamId;
      };
      // The council's reasoning opens the thinking stream; the model's own reasoning, if any, follows it.
      if (request.thinking) {
        switchTo("thinking");
        for (const delta of tokenize(request.thinking)) emit({ type: "chunk", stream_id: "thinking", delta });
      }
      let separate = request.thinking !== "";
      for await (const part of stream) {
        if (part.delta === "") continue;
        switchTo(part.type === "reasoning" ? "thinking" : "default");
        if (part.type === "content") text += part.delta;
        const delta = part.type === "reasoning" && separate ? ` ${part.delta}` : part.delta;
        if (part.type === "reasoning") separate = false;
        emit({ type: "chunk", stream_id: part.type === "reasoning" ? "thinking" : "default", delta });
      }
      if (open) emit({ type: "end", stream_id: open });
      return { text: text.trim(), usage: onModel(await stream.usage) };
    },
    judge: async (critic, request, signal) => {
      if (!LLM_CRITICS.includes(critic)) throw new UnknownCriticError(critic);
      const { value, usage } = await model.structured({
        caller: `critic:${critic}`,
        ...criticPrompt(critic, request),
        schema: Verdict,
        schemaName: "critic_verdict",
        signal,
      });
      return { result: { critic, ...value, feedback: value.passed ? "" : value.feedback }, usage: onModel(usage) };
    },
  };
}
