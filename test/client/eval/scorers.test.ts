import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDataset, type ScorerInput } from "../../../src/client/eval/dataset.ts";
import { JUDGE_SCHEMA_NAME, modelJudge, offlineJudge, rubricTerms } from "../../../src/client/eval/judge.ts";
import { type ScoringContext, scoreReply } from "../../../src/client/eval/scorers.ts";
import { offlineBackend } from "../../../src/cognition/backend.ts";
import { createChatModel, llmConfigFromEnv } from "../../../src/llm/index.ts";
import { llmBackend } from "../../../src/llm/llmBackend.ts";
import { type OpenAIServer, startOpenAIServer } from "../../helpers/openaiServer.ts";

/** The scorer as a dataset would give it, its defaults filled in. */
const spec = (scorer: ScorerInput) => parseDataset(JSON.stringify([{ input: "x", scorers: [scorer] }]))[0]!.scorers[0]!;

const offline = (reply: string, expected?: string): ScoringContext => ({
  input: "the question",
  ...(expected !== undefined ? { expected } : {}),
  reply,
  judge: offlineJudge,
  critics: offlineBackend,
  sessionId: "eval-unit",
});

describe("exact", () => {
  it("passes the expected text, trimmed; case counts unless ignore_case", async () => {
    expect(await scoreReply(spec({ type: "exact" }), offline(" Paris\n", "Paris"))).toMatchObject({
      score: 1,
      passed: true,
    });
    expect(await scoreReply(spec({ type: "exact" }), offline("paris", "Paris"))).toEqual({
      scorer: "exact",
      score: 0,
      passed: false,
      detail: 'expected "Paris", got "paris"',
    });
    expect(await scoreReply(spec({ type: "exact", ignore_case: true }), offline("paris", "Paris"))).toMatchObject({
      passed: true,
    });
    expect(await scoreReply(spec({ type: "exact", expected: "Lima" }), offline("Lima", "Paris"))).toMatchObject({
      passed: true,
    });
  });

  it("fails, saying why, when nothing is expected", async () => {
    expect(await scoreReply(spec({ type: "exact" }), offline("Paris"))).toMatchObject({
      score: 0,
      detail: "no expected text: give the case or the scorer `expected`",
    });
  });
});

describe("contains", () => {
  it("ignores case by default, and scores the share of a list found", async () => {
    expect(await scoreReply(spec({ type: "contains" }), offline("It is PARIS.", "paris"))).toMatchObject({
      score: 1,
      passed: true,
    });
    expect(
      await scoreReply(spec({ type: "contains", ignore_case: false }), offline("It is PARIS.", "paris")),
    ).toMatchObject({
      score: 0,
      passed: false,
    });
    expect(
      await scoreReply(
        spec({ type: "contains", expected: ["moon", "tide", "sea", "wind"] }),
        offline("The Moon pulls the sea."),
      ),
    ).toEqual({ scorer: "contains", score: 0.5, passed: false, detail: 'misses "tide", "wind"' });
  });
});

describe("json_schema", () => {
  const schema = {
    type: "object",
    properties: { result: { type: "number" }, unit: { type: "string", pattern: "^[a-z]+$" } },
    required: ["result"],
  };
  it("passes JSON valid against the schema, and fails the rest, saying where", async () => {
    expect(
      await scoreReply(spec({ type: "json_schema", schema }), offline('{"result": 4, "unit": "cm"}')),
    ).toMatchObject({
      score: 1,
      passed: true,
    });
    const wrongType = await scoreReply(spec({ type: "json_schema", schema }), offline('{"result": "4"}'));
    expect(wrongType).toMatchObject({ score: 0, passed: false });
    expect(wrongType.detail).toMatch(/^result: /);
    expect(await scoreReply(spec({ type: "json_schema", schema }), offline('{"result": 4, "unit": "CM"}'))).toEqual({
      scorer: "json_schema",
      score: 0,
      passed: false,
      detail: 'unit: Invalid string: must match pattern "^[a-z]+$"',
    });
    expect(await scoreReply(spec({ type: "json_schema", schema }), offline("four"))).toMatchObject({
      score: 0,
      detail: 'the reply is not JSON: "four"',
    });
  });
});

describe("llm_judge, offline", () => {
  it("looks for the rubric's quoted terms, else its uncommon words", () => {
    expect(rubricTerms("Greets the user by name: \"hello\" and 'Ada'")).toEqual(["hello", "ada"]);
    expect(rubricTerms("Mentions the moon and the tides, which cause them")).toEqual([
      "mentions",
      "moon",
      "tides",
      "cause",
    ]);
  });

  it("scores the share of the terms the reply has, passing at `pass`", async () => {
    const rubric = 'says "hello", "ada" and "welcome"';
    const scored = await scoreReply(spec({ type: "llm_judge", rubric }), offline("Hello, Ada!"));
    expect(scored).toEqual({ scorer: "llm_judge", score: 2 / 3, passed: true, detail: "offline: misses 'welcome'" });
    expect(await scoreReply(spec({ type: "llm_judge", rubric, pass: 0.9 }), offline("Hello, Ada!"))).toMatchObject({
      passed: false,
    });
  });
});

describe("critics, offline", () => {
  it("scores the mean of Conclave's critics and passes when every one does", async () => {
    expect(await scoreReply(spec({ type: "critics" }), offline("The capital is Paris."))).toEqual({
      scorer: "critics",
      score: 1,
      passed: true,
      detail: "passed safety, do_not, coherence, length",
    });
    const scored = await scoreReply(
      spec({ type: "critics", intent: "celebrate", do_not: ["promise that a fix will work"] }),
      offline("This will definitely fix it."),
    );
    // do_not 0.2, coherence 0.4 (no celebration), safety and length 1.
    expect(scored.score).toBeCloseTo((1 + 0.2 + 0.4 + 1) / 4);
    expect(scored.passed).toBe(false);
    expect(scored.detail).toContain("do_not: The reply must not promise that a fix will work");
    expect(scored.detail).toContain("coherence: The reply does not carry the council's intent 'celebrate'");
  });

  it("judges with the critics named only", async () => {
    expect(await scoreReply(spec({ type: "critics", critics: ["length"] }), offline("x".repeat(2_400)))).toMatchObject({
      score: 0.5,
      passed: false,
    });
  });
});

describe("the model's judge and critics, through the openai client", () => {
  let server: OpenAIServer;
  beforeAll(async () => {
    server = await startOpenAIServer((body) => {
      if (body.model === "broken-model") return { status: 400, body: { error: { message: "no such model" } } };
      const schema = body.response_format?.json_schema?.name;
      const user = body.messages.find((message) => message.role === "user")?.content ?? "";
      if (schema === JUDGE_SCHEMA_NAME) {
        const { reply } = JSON.parse(user) as { reply: string };
        return {
          content: JSON.stringify({ score: reply.includes("Ada") ? 0.9 : 0.2, reason: "graded by the test model" }),
        };
      }
      if (schema === "critic_verdict") {
        const critic = /You are the ([a-z_]+) critic/.exec(body.messages[0]?.content ?? "")?.[1];
        return {
          content: JSON.stringify(
            critic === "length"
              ? { passed: false, score: 0.5, feedback: "Shorter." }
              : { passed: true, score: 1, feedback: "" },
          ),
        };
      }
      return { status: 400, body: { error: { message: `unexpected schema ${schema}` } } };
    });
  });
  afterAll(async () => {
    await server?.stop();
  });
  const model = () =>
    createChatModel(llmConfigFromEnv({ CONCLAVE_LLM_BASE_URL: server.url, CONCLAVE_LLM_MODEL: "judge-model" })!);
  const withModel = (reply: string): ScoringContext => ({
    ...offline(reply),
    judge: modelJudge(model()),
    critics: llmBackend(model()),
  });

  it("asks the model to grade against the rubric, and takes its score", async () => {
    const rubric = "Greets the user by name";
    expect(await scoreReply(spec({ type: "llm_judge", rubric }), withModel("Hello, Ada!"))).toEqual({
      scorer: "llm_judge",
      score: 0.9,
      passed: true,
      detail: "judge-model: graded by the test model",
    });
    expect(await scoreReply(spec({ type: "llm_judge", rubric }), withModel("Hi."))).toMatchObject({
      score: 0.2,
      passed: false,
    });
    const asked = server.requests.find((request) => request.response_format?.json_schema?.name === JUDGE_SCHEMA_NAME);
    expect(asked?.model).toBe("judge-model");
    expect(asked?.messages[0]?.content).toContain("Rubric: Greets the user by name");
    expect(JSON.parse(asked?.messages[1]?.content ?? "{}")).toEqual({ input: "the question", reply: "Hello, Ada!" });
  });

  it("asks the model's critics and averages their verdicts", async () => {
    expect(await scoreReply(spec({ type: "critics" }), withModel("Paris."))).toEqual({
      scorer: "critics",
      score: (1 + 1 + 1 + 0.5) / 4,
      passed: false,
      detail: "length: Shorter.",
    });
  });

  it("scores 0, with the error, when the model cannot answer", async () => {
    const broken = createChatModel(
      llmConfigFromEnv({ CONCLAVE_LLM_BASE_URL: server.url, CONCLAVE_LLM_MODEL: "broken-model" })!,
    );
    const scored = await scoreReply(spec({ type: "llm_judge", rubric: "x" }), {
      ...offline("x"),
      judge: modelJudge(broken),
    });
    expect(scored).toMatchObject({ scorer: "llm_judge", score: 0, passed: false });
    expect(scored.detail).toMatch(/^the scorer failed: /);
  });
});
