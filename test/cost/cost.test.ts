/**
 * A session's cost on a real nats-server, with a runner and a worker in LLM
 * mode against the scripted OpenAI-compatible model (it reports token usage):
 * the summary per actor, model, skill and turn through the client API and
 * `conclave cost` (readable and --json), priced with a price file.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, type CostSummary, connect } from "../../src/client/index.ts";
import { runConclave } from "../helpers/cli.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const SESSION = "cost-1";
const pricesFile = join(mkdtempSync(join(tmpdir(), "conclave-cost-")), "prices.yaml");
writeFileSync(
  pricesFile,
  [
    "models:",
    "  scripted-model: { input_per_million: 1.5, output_per_million: 6 }",
    "actors:",
    "  council: scripted-model",
    "default_model: scripted-model",
    "",
  ].join("\n"),
);

const nats = useNatsServer();
let model: OpenAIServer;
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "scripted-model" }),
);
let client: ConclaveClient;

beforeAll(async () => {
  model = await startOpenAIServer(conclaveModel());
  await processes.spawn("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]);
  await processes.spawn("runner", ["runner"]);
  client = await connect({ nc: await nats.connect("client") });
  for (const text of ["I'm stressed about my deadline tomorrow", "Thanks, that helps a little"])
    await client.submit(SESSION, text).result;
}, 120_000);
afterAll(async () => {
  await client?.close();
  await model?.stop();
});

describe("a session's cost", () => {
  let summary: CostSummary;
  beforeAll(async () => {
    summary = await client.cost(SESSION, { prices: pricesFile });
  });

  it("sums the tokens each turn recorded, per turn and per actor, and prices them", async () => {
    const usage = [];
    for await (const { event } of client.events(SESSION))
      if (event.kind === "TURN_COMPLETED") usage.push(event.payload.usage);
    expect(usage).toHaveLength(2);
    expect(summary.turns).toBe(2);
    const prompt = usage.reduce((sum, turn) => sum + turn.prompt_tokens, 0);
    const completion = usage.reduce((sum, turn) => sum + turn.completion_tokens, 0);
    expect(prompt).toBeGreaterThan(0);
    expect(summary.total).toMatchObject({ prompt_tokens: prompt, completion_tokens: completion, unpriced_tokens: 0 });
    expect(summary.total.usd).toBeCloseTo((prompt * 1.5 + completion * 6) / 1_000_000, 10);
    expect(summary.by_turn.map((row) => row.name)).toEqual(["1", "2"]);
    const actors = new Set(usage.flatMap((turn) => Object.keys(turn.by_actor)));
    expect(new Set(summary.by_actor.map((row) => row.name))).toEqual(actors);
    expect(summary.by_actor.some((row) => row.name.startsWith("agent:"))).toBe(true);
    expect(summary.by_model).toEqual([expect.objectContaining({ name: "scripted-model", prompt_tokens: prompt })]);
    const actorTotal = summary.by_actor.reduce((sum, row) => sum + row.usd, 0);
    expect(actorTotal).toBeCloseTo(summary.total.usd, 10);
  });

  it("shows tokens only for models the table does not price", async () => {
    const unpriced = await client.cost(SESSION, { prices: { models: {}, actors: {}, tenants: {} } });
    expect(unpriced.total.usd).toBe(0);
    expect(unpriced.total.unpriced_tokens).toBe(summary.total.prompt_tokens + summary.total.completion_tokens);
    // Each call recorded the model it ran on: no actor is left on `unknown`.
    expect(unpriced.by_model.map((row) => row.name)).toEqual(["scripted-model"]);
  });

  it("`conclave cost` prints a readable summary, and the same summary as JSON with --json", async () => {
    const readable = await runConclave(nats.url, ["cost", SESSION], { CONCLAVE_PRICES: pricesFile });
    expect(readable.code, readable.stderr).toBe(0);
    expect(readable.stdout).toContain(`session ${SESSION}: 2 turns, $${summary.total.usd.toFixed(4)}`);
    expect(readable.stdout).toMatch(/by actor:\n {2}agent:/);
    expect(readable.stdout).toContain("by model:\n  scripted-model");
    const json = await runConclave(nats.url, ["cost", SESSION, "--json", "--prices", pricesFile]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(summary);
  });

  it("refuses a price file that does not fit with one clear line", async () => {
    const bad = join(mkdtempSync(join(tmpdir(), "conclave-cost-")), "prices.json");
    writeFileSync(bad, JSON.stringify({ models: { m: { input_per_million: -1, output_per_million: 1 } } }));
    const result = await runConclave(nats.url, ["cost", SESSION, "--prices", bad]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("models.m.input_per_million");
  });
});
