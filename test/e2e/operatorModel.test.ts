/**
 * The shipped operator recipe with a model (the suite's OpenAI-compatible server, through the real
 * `openai` client): its plan step asks the model for the plan, from the reasoning step's findings,
 * and the plan is never surer than those findings, so an unsure reasoning still stops at the
 * validate gate. Real nats-server, the shipped agents and tools in a `conclave worker` process.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { parseRecipeText } from "../../src/recipes/load.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type ChatRequestBody, type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
let model: OpenAIServer;
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "scripted-model", CONCLAVE_LLM_MAX_RETRIES: "0" }),
);
const sandbox = mkdtempSync(join(tmpdir(), "conclave-operator-model-"));
let client: ConclaveClient;

const operator = () => parseRecipeText(readFileSync("recipes/operator.yaml", "utf8")) as JsonObject;
const FINDING = "the quokka daemon holds 7 GiB";
/** The reasoning step's confidence, set by each test. */
let reasoningConfidence = 0.8;

/** The model plays each step by the schema it is asked for. */
function answer(body: ChatRequestBody): { content: string } {
  const system = String(body.messages[0]?.content ?? "");
  const schema = body.response_format?.json_schema?.name;
  if (schema === "operator_plan")
    return {
      content: JSON.stringify({
        actions: [
          {
            tool: "sandbox_write",
            args: { path: "reports/quokka.md", content: `# Quokka\n\n${FINDING}\n` },
            why: "record the memory hog",
          },
        ],
        confidence: 0.95,
      }),
    };
  if (system.startsWith("Classify")) return { content: JSON.stringify({ intent: "process_report", entities: [] }) };
  if (system.startsWith("From these system facts"))
    return { content: JSON.stringify({ findings: [FINDING], confidence: reasoningConfidence }) };
  return { content: "{}" };
}

const plannerRequests = (): ChatRequestBody[] =>
  model.requests.filter((body) => body.response_format?.json_schema?.name === "operator_plan");

beforeAll(async () => {
  model = await startOpenAIServer(answer);
  await processes.spawn("operator", ["worker", "--agents", "./agents/recipes/index.ts", "--tools", "builtin"], {
    CONCLAVE_SANDBOX_DIR: sandbox,
  });
  await processes.spawn("runner", ["runner"]);
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await client?.close();
  await model?.stop();
});

describe("the operator recipe's plan step with a model", () => {
  it("plans with the model from the findings, and the executor would carry out the model's plan", async () => {
    reasoningConfidence = 0.8;
    const run = await client.run("operator-model", operator(), {
      inputs: { request: "What is using memory?" },
      dryRun: true,
    });
    expect(run.status).toBe("completed");
    if (run.status !== "completed") return;
    expect(run.output.plan).toMatchObject({
      actions: [{ tool: "sandbox_write", args: { path: "reports/quokka.md" }, why: "record the memory hog" }],
      // The model said 0.95; the plan is no surer than the reasoning it came from.
      confidence: 0.8,
    });
    // The model was asked from the reasoning step's findings.
    const [request] = plannerRequests();
    expect(JSON.parse(String(request?.messages.at(-1)?.content))).toEqual({ findings: [FINDING], confidence: 0.8 });
    expect(run.output.executed).toMatchObject({
      results: [{ tool: "sandbox_write", result: { would_write: expect.stringContaining("reports/quokka.md") } }],
    });
  });

  it("keeps an unsure reasoning's plan below the validate gate, so nothing is executed", async () => {
    reasoningConfidence = 0.3;
    const before = plannerRequests().length;
    const run = await client.run("operator-model-unsure", operator(), {
      inputs: { request: "What is using memory?" },
      dryRun: true,
    });
    expect(run.status).toBe("completed");
    if (run.status !== "completed") return;
    expect(plannerRequests()).toHaveLength(before + 1);
    expect(run.output.plan).toMatchObject({ confidence: 0.3 });
    expect(run.output.executed).toBeUndefined();
  });
});
