/**
 * `conclave eval` in LLM mode: the fixture agent answers through the model,
 * and the llm_judge and critics scorers ask it too, all through the real
 * `openai` client against the suite's OpenAI-compatible server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JUDGE_SCHEMA_NAME } from "../../src/client/eval/judge.ts";
import type { EvalReport } from "../../src/client/eval/runEval.ts";
import { answer } from "../fixtures/eval/answers.ts";
import { AGENTS, CASES, OFFLINE_SCORES, RECIPE, scoresOf } from "../fixtures/eval/expected.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
let model: OpenAIServer;
const llmEnv = () => ({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "scripted-model" });
const processes = useConclaveProcesses(() => nats.url, llmEnv);

/** In LLM mode the model knows Peru's capital; its judge gives 0.9, each critic 0.95. */
const LLM_SCORES = { ...OFFLINE_SCORES, "capital-peru": 1, "greet-ada": 0.9, "greet-bob": 0.95 };

beforeAll(async () => {
  model = await startOpenAIServer((body) => {
    const user = body.messages.find((message) => message.role === "user")?.content ?? "";
    if (body.stream) return { content: answer(user, true) };
    const schema = body.response_format?.json_schema?.name;
    if (schema === JUDGE_SCHEMA_NAME) {
      const { reply } = JSON.parse(user) as { reply: string };
      return {
        content: JSON.stringify({ score: reply.includes("Ada") ? 0.9 : 0.1, reason: "judged by the scripted model" }),
      };
    }
    if (schema === "critic_verdict") return { content: JSON.stringify({ passed: true, score: 0.95, feedback: "" }) };
    return { status: 400, body: { error: { message: `unexpected request (schema ${schema})` } } };
  });
  await processes.spawn("agents", ["worker", "--agents", AGENTS]);
  await processes.spawn("runner", ["runner"]);
});
afterAll(async () => {
  await model?.stop();
});

describe("conclave eval in LLM mode", () => {
  it("scores an agent answering through the model, judged and criticised by the model", async () => {
    const { code, stdout } = await runConclave(
      nats.url,
      ["eval", CASES, "--agent", "evals.answerer", "--concurrency", "4", "--run-id", "llmagent", "--json"],
      llmEnv(),
    );
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as EvalReport;
    expect(scoresOf(report)).toEqual(LLM_SCORES);
    expect(report).toMatchObject({ judge: "scripted-model", cases_passed: 17, passed: true });
    expect(report.score).toBeCloseTo(17.35 / 20);
    expect(report.cases.find((one) => one.id === "greet-ada")?.scores[0]?.detail).toBe(
      "scripted-model: judged by the scripted model",
    );
    // The agent's answers, the judge and the four critics all went to the model.
    const asked = (name: string) =>
      model.requests.filter((request) => request.response_format?.json_schema?.name === name);
    expect(model.requests.filter((request) => request.stream).length).toBeGreaterThanOrEqual(20);
    expect(asked(JUDGE_SCHEMA_NAME)).toHaveLength(1);
    expect(asked("critic_verdict")).toHaveLength(4);
  });

  it("exits 1 when a recipe's run is under the threshold", async () => {
    const { code, stdout } = await runConclave(
      nats.url,
      ["eval", CASES, "--recipe", RECIPE, "--concurrency", "4", "--threshold", "0.9", "--json"],
      llmEnv(),
    );
    expect(code).toBe(1);
    const report = JSON.parse(stdout) as EvalReport;
    expect(scoresOf(report)).toEqual(LLM_SCORES);
    expect(report).toMatchObject({ target: "recipe:answer-then-polish", threshold: 0.9, passed: false });
  });
});
