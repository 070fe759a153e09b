/**
 * Memory's model calls in a turn's cost (issue 38, item 5): a memory service on a model
 * (CONCLAVE_LLM_MODEL) with embeddings (CONCLAVE_EMBEDDING_MODEL), through the real `openai`
 * client against the suite's model server. Its fact extraction and its embeddings are rows of the
 * session's cost, each with the tokens the server reported and the model it ran on (the price
 * table names no actor's model), and the runner's budget counts them.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { isConclaveError } from "../../src/errors.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, type ServedUsage, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const pricesFile = join(mkdtempSync(join(tmpdir(), "conclave-memory-cost-")), "prices.json");
// No `actors` and no `default_model`: only the model a call recorded can price it.
writeFileSync(
  pricesFile,
  JSON.stringify({
    models: {
      "memory-model": { input_per_million: 1000, output_per_million: 1000 },
      "embed-model": { input_per_million: 100, output_per_million: 0 },
    },
  }),
);

const learning = {
  facts: [{ text: "has a sister called Ana", topics: ["family"], key: "family.sister" }],
  threads_opened: [],
  threads_resolved_keys: [],
  episode: { text: "The user talked about their sister Ana.", topics: ["family"] },
  patches: null,
};

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let model: OpenAIServer;
let client: ConclaveClient;

beforeAll(async () => {
  model = await startOpenAIServer((body) =>
    body.response_format?.json_schema?.name === "memory_learning"
      ? { content: JSON.stringify(learning), usage: { prompt_tokens: 1200, completion_tokens: 300 } }
      : { status: 400 },
  );
  await Promise.all([
    // The agents, council and critics on the offline model: every token of a turn is memory's.
    processes.spawn("agents", ["worker", "--agents", "*", "--services", "scheduler,council,critics"]),
    processes.spawn("memory", ["worker", "--services", "memory"], {
      CONCLAVE_LLM_BASE_URL: model.url,
      CONCLAVE_LLM_MODEL: "memory-model",
      CONCLAVE_EMBEDDING_MODEL: "embed-model",
    }),
    // $1.50 of extraction a turn: the first turn spends the budget.
    processes.spawn("runner", ["runner"], { CONCLAVE_PRICES: pricesFile, CONCLAVE_SESSION_BUDGET_USD: "1" }),
  ]);
  client = await connect({ nc: await nats.connect("client") });
}, 120_000);
afterAll(async () => {
  await client?.close();
  await model?.stop();
});

/** The tokens the server reported on `route`, in total. */
function servedOn(route: ServedUsage["route"]): { prompt_tokens: number; completion_tokens: number; models: string[] } {
  const calls = model.served.filter((call) => call.route === route);
  return {
    prompt_tokens: calls.reduce((sum, call) => sum + call.prompt_tokens, 0),
    completion_tokens: calls.reduce((sum, call) => sum + call.completion_tokens, 0),
    models: [...new Set(calls.map((call) => call.model))],
  };
}

describe("memory's model calls in cost and budgets", () => {
  it("counts the turn's fact extraction and embeddings on the models they ran on", async () => {
    const session = "memory-cost";
    const first = await client.submit(session, "I have a sister called Ana.").result;
    expect(first.outcome.status).toBe("Complete");

    const chat = servedOn("chat");
    const embeddings = servedOn("embeddings");
    expect(chat).toEqual({ prompt_tokens: 1200, completion_tokens: 300, models: ["memory-model"] });
    expect(embeddings.prompt_tokens).toBeGreaterThan(0);
    expect(embeddings.models).toEqual(["embed-model"]);

    const cost = await client.cost(session, { prices: pricesFile });
    const row = (name: string) => cost.by_actor.find((actor) => actor.name === name);
    expect(row("memory:extraction")).toMatchObject({
      model: "memory-model",
      prompt_tokens: chat.prompt_tokens,
      completion_tokens: chat.completion_tokens,
      usd: 1.5,
      unpriced_tokens: 0,
    });
    expect(row("memory:embeddings")).toMatchObject({
      model: "embed-model",
      prompt_tokens: embeddings.prompt_tokens,
      completion_tokens: 0,
      unpriced_tokens: 0,
    });
    expect(row("memory:embeddings")?.usd).toBeCloseTo((embeddings.prompt_tokens * 100) / 1_000_000, 10);
    expect(cost.by_model.map((entry) => entry.name).sort()).toEqual(["embed-model", "memory-model"]);
    expect(cost.total.prompt_tokens).toBe(chat.prompt_tokens + embeddings.prompt_tokens);
    expect(cost.total.usd).toBeGreaterThanOrEqual(1.5);
  });

  it("refuses the next turn of a session whose memory extraction spent its budget", async () => {
    const session = "memory-budget";
    expect((await client.submit(session, "I have a sister called Ana.").result).outcome.status).toBe("Complete");
    // The agents' calls cost nothing here: memory's extraction alone spent the $1 budget.
    const refused = await client.submit(session, "And my brother is called Leo.").result.then(
      () => null,
      (error: unknown) => (isConclaveError(error) ? error : Promise.reject(error)),
    );
    expect(refused?.code).toBe("forbidden");
    expect(refused?.message).toMatch(
      /^budget exceeded: session memory-budget has spent \$1\.5\d{3} of its \$1\.00 budget/,
    );
    expect((await client.turns(session)).map((turn) => turn.turn_id)).toEqual([1]);
  });
});
