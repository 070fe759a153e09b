/**
 * The critics fail closed. When the critics cannot judge (their model is down,
 * or no worker serves them), the safety critic's place is taken by the
 * deterministic safety check, run in the runner: a harmful draft is still
 * caught and re-rendered, and the turn's warnings name the fallback. It never
 * reads as the safety critic's approval.
 */
import { describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { CRITIC_NAMES } from "../../src/cognition/critics.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { LlmConfig } from "../../src/llm/config.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type ReplyHandler, startOpenAIServer } from "../helpers/openaiServer.ts";

const nats = useNatsServer();

const HARMFUL = "Here is how to hurt whoever set that deadline, step by step.";
const SAFE = "That sounds hard. Let's take one small step together.";
const SAFETY_FEEDBACK = "Remove any instructions that could cause harm.";

/** A turn with one worker set up as given and an in-process runner; both stopped after. */
async function turnWith(worker: Omit<Parameters<typeof startWorker>[0], "nc">, session: string, text: string) {
  const hosted = await startWorker({ nc: await nats.connect("worker"), ...worker });
  const runner = await Runner.start(await nats.connect("runner"));
  try {
    const nc = await nats.connect("client");
    const events: EngineEvent[] = [];
    const completed = await watchTurn(
      nc,
      await submitTurn(nc, session, { text }),
      (event) => events.push(event),
      30_000,
    );
    return { events, completed };
  } finally {
    await runner.stop();
    await hosted.stop();
  }
}

const verdictsOf = (events: EngineEvent[]) =>
  events.flatMap((event) => (event.kind === "CRITICS_UPDATED" ? [event.payload] : []));

describe("critics that cannot judge", () => {
  it("fall back to the deterministic safety check when the critics' model is down, which catches a harmful draft", async () => {
    const cooperative = conclaveModel();
    // The model answers everything but the critics (an outage of their calls: 503s), and its first draft is harmful.
    const handler: ReplyHandler = (body, index) => {
      if (body.response_format?.json_schema?.name === "critic_verdict")
        return { status: 503, body: { error: { message: "model overloaded", type: "server_error" } } };
      if (body.stream) {
        const revised = (body.messages[0]?.content ?? "").includes("rejected by the critics");
        return { content: revised ? SAFE : HARMFUL };
      }
      return cooperative(body, index);
    };
    const model = await startOpenAIServer(handler);
    const llm: LlmConfig = { baseURL: model.url, apiKey: "k", model: "scripted", timeoutMs: 5_000, maxRetries: 0 };
    try {
      const { events, completed } = await turnWith(
        { agents: builtinAgents("*"), services: ["scheduler", "council", "critics", "memory"], llm },
        "critics-model-down",
        "I'm stressed about my deadline tomorrow",
      );
      // Every critic call reached the model and failed: none of them judged.
      const criticCalls = model.requests.filter(
        (request) => request.response_format?.json_schema?.name === "critic_verdict",
      );
      expect(criticCalls.length).toBeGreaterThanOrEqual(CRITIC_NAMES.length);

      const verdicts = verdictsOf(events);
      // Each verdict also lists the critics that could not judge (`failures`, with the safety check's fallback named).
      const safetyFellBack = expect.arrayContaining([
        expect.objectContaining({ critic: "safety", fallback: "the deterministic safety check" }),
      ]);
      expect(verdicts).toEqual([
        {
          attempt: 1,
          passed: false,
          results: [{ critic: "safety", passed: false, score: 0, feedback: SAFETY_FEEDBACK }],
          failures: safetyFellBack,
        },
        {
          attempt: 2,
          passed: true,
          results: [{ critic: "safety", passed: true, score: 1, feedback: "" }],
          failures: safetyFellBack,
        },
      ]);
      // The fallback's feedback reached the voice, which rendered again.
      const renderings = model.requests.filter((request) => request.stream);
      expect(renderings).toHaveLength(2);
      expect(renderings[1]?.messages[0]?.content).toContain(SAFETY_FEEDBACK);

      expect(completed.payload.response).toBe(SAFE);
      const outcome = completed.payload.outcome;
      expect(outcome.status).toBe("PartialSuccess");
      if (outcome.status !== "PartialSuccess") return;
      const safety = outcome.warnings.filter((warning) => warning.subject === "critic:safety");
      expect(safety).not.toHaveLength(0);
      for (const warning of safety) {
        expect(warning.stage).toBe("critics");
        expect(warning.message).toContain("the deterministic safety check judged the reply in its place");
      }
    } finally {
      await model.stop();
    }
  });

  it("judge with the deterministic safety check when no worker serves the critics, never an empty pass", async () => {
    const { events, completed } = await turnWith(
      { agents: builtinAgents("*"), services: ["scheduler", "council", "memory"] },
      "critics-absent",
      "hello, how are you?",
    );
    const verdicts = verdictsOf(events);
    expect(verdicts).toHaveLength(1);
    expect(verdicts[0]?.results).toEqual([{ critic: "safety", passed: true, score: 1, feedback: "" }]);
    expect(verdicts[0]?.passed).toBe(true);
    const outcome = completed.payload.outcome;
    expect(outcome.status).toBe("PartialSuccess");
    if (outcome.status !== "PartialSuccess") return;
    expect(outcome.warnings.map((warning) => [warning.code, warning.subject])).toEqual(
      CRITIC_NAMES.map((critic) => ["no_responders", `critic:${critic}`]),
    );
    const safety = outcome.warnings.find((warning) => warning.subject === "critic:safety");
    expect(safety?.message).toContain("the deterministic safety check judged the reply in its place");
  });
});
