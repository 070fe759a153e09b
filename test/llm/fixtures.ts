import { onTestFinished } from "vitest";
import { z } from "zod";
import type { LlmConfig } from "../../src/llm/config.ts";
import { OpenAIChatModel } from "../../src/llm/openaiModel.ts";
import { type ReplyHandler, type ScriptedReply, scripted, startOpenAIServer } from "../helpers/openaiServer.ts";

/** The structured output most tests ask for. */
export const Verdict = z.object({
  verdict: z.enum(["pass", "fail"]),
  score: z.number().min(0).max(1),
  reasons: z.array(z.string()),
});

export const validVerdict = { verdict: "pass", score: 0.8, reasons: ["on topic"] } as const;

/** A scripted server for this test (stopped when it ends) and a real client pointed at it. */
export async function modelAgainst(replies: ScriptedReply[] | ReplyHandler, config: Partial<LlmConfig> = {}) {
  const server = await startOpenAIServer(Array.isArray(replies) ? scripted(...replies) : replies);
  onTestFinished(() => server.stop());
  const model = new OpenAIChatModel({
    baseURL: server.url,
    apiKey: "test-key",
    model: "test-model",
    timeoutMs: 5_000,
    maxRetries: 2,
    ...config,
  });
  return { server, model };
}

/** The error a promise rejects with (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject");
}
