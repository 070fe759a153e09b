/**
 * A compaction's summary written by memory's model (issue 38, item 5), through the real `openai`
 * client against the suite's model server: a memory service on a model (CONCLAVE_LLM_MODEL) folds the
 * older turns into the session's summary while the turn reads its conversation. CONTEXT_COMPACTED says
 * `summariser: "model"` with the call's usage and model; the turn's cost counts it as
 * `context:compaction`, priced on that model, and the runner's budget sees it. A model that does not
 * answer in time costs the turn only its model summary: it compacts offline.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent, EventPayload } from "../../src/contracts/events.ts";
import { isConclaveError } from "../../src/errors.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type ChatRequestBody, type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";

const pricesFile = join(mkdtempSync(join(tmpdir(), "conclave-compaction-model-")), "prices.json");
// No `actors` and no `default_model`: only the model a call recorded can price it.
writeFileSync(
  pricesFile,
  JSON.stringify({ models: { "memory-model": { input_per_million: 1000, output_per_million: 0 } } }),
);

const SUMMARY = "Summary by the model: the user is planning a rose garden.";
const HANG = "Tulips grow from bulbs";
const isSummaryCall = (body: ChatRequestBody) =>
  String(body.messages[0]?.content).startsWith("Summarise the conversation so far");

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let model: OpenAIServer;
let client: ConclaveClient;

beforeAll(async () => {
  model = await startOpenAIServer((body) => {
    // Memory's fact extraction: nothing learnt, and free, so every token a turn spends is its summary's.
    if (body.response_format?.json_schema?.name === "memory_learning")
      return {
        content: JSON.stringify({
          facts: [],
          threads_opened: [],
          threads_resolved_keys: [],
          episode: null,
          patches: null,
        }),
        usage: { prompt_tokens: 0, completion_tokens: 0 },
      };
    if (isSummaryCall(body))
      return String(body.messages.at(-1)?.content).includes(HANG)
        ? { hang: true }
        : { content: SUMMARY, usage: { prompt_tokens: 1000, completion_tokens: 0 } };
    return { status: 400 };
  });
  await Promise.all([
    // The agents, council and critics on the offline model.
    processes.spawn("agents", ["worker", "--agents", "*", "--services", "scheduler,council,critics"]),
    processes.spawn("memory", ["worker", "--services", "memory"], {
      CONCLAVE_LLM_BASE_URL: model.url,
      CONCLAVE_LLM_MODEL: "memory-model",
    }),
    // $1.00 a summary: a session that compacted once has spent its budget.
    processes.spawn("runner", ["runner"], { CONCLAVE_PRICES: pricesFile, CONCLAVE_SESSION_BUDGET_USD: "0.5" }),
  ]);
  client = await connect({ nc: await nats.connect("client") });
}, 120_000);
afterAll(async () => {
  await client?.close();
  await model?.stop();
});

/** Runs a turn to its end; its stored events. */
async function turn(session: string, text: string): Promise<EngineEvent[]> {
  const submitted = client.submit(session, text);
  const { turn_id: turnId } = await submitted.ack;
  expect((await submitted.result).outcome.status).toBe("Complete");
  return turnLog(client, session, turnId);
}

const payloadOf = <K extends EngineEvent["kind"]>(events: EngineEvent[], kind: K): EventPayload<K> | undefined =>
  events.find((event) => event.kind === kind)?.payload as EventPayload<K> | undefined;

describe("a compaction's summary written by memory's model", () => {
  it("is recorded with its usage and model, counted in the turn's cost, and seen by the budget", async () => {
    const session = "compaction-model";
    for (const text of ["I plan a garden by the wall.", "Roses, mostly red ones.", "Planting in June."]) {
      expect(payloadOf(await turn(session, text), "CONTEXT_COMPACTED")).toBeUndefined();
    }
    expect(model.requests.filter(isSummaryCall)).toHaveLength(0);
    await client.requestCompaction(session, { reason: "switching topics", instructions: "keep the plants" });

    const events = await turn(session, "Now, about my bike.");
    const usage = { prompt_tokens: 1000, completion_tokens: 0, model: "memory-model" };
    expect(payloadOf(events, "CONTEXT_COMPACTED")).toMatchObject({
      summariser: "model",
      reason: "requested",
      turns_compacted: [1],
      through_turn: 1,
      summary: SUMMARY,
      usage,
    });
    // One call, asked with the turn it folds in and the request's instructions.
    const asked = model.requests.filter(isSummaryCall);
    expect(asked).toHaveLength(1);
    expect(String(asked[0]?.messages[0]?.content)).toContain("Instructions for this summary: keep the plants");
    expect(String(asked[0]?.messages.at(-1)?.content)).toContain("T1 user: I plan a garden by the wall.");
    expect(String(asked[0]?.messages.at(-1)?.content)).not.toContain("Planting in June");
    // The agents were given the model's summary.
    const planned = payloadOf(events, "CONTEXT_PLANNED");
    expect(planned?.zones.working_memory.kept).toContain("summary");
    expect(payloadOf(events, "TURN_COMPLETED")?.usage.by_actor["context:compaction"]).toEqual(usage);

    const cost = await client.cost(session, { prices: pricesFile });
    expect(cost.by_actor.find((row) => row.name === "context:compaction")).toMatchObject({
      model: "memory-model",
      prompt_tokens: 1000,
      completion_tokens: 0,
      usd: 1,
      unpriced_tokens: 0,
    });
    expect(cost.total.usd).toBe(1);

    // The summary spent the session's $0.50 budget: its next turn is refused.
    const refused = await client.submit(session, "It has a flat tyre.").result.then(
      () => null,
      (error: unknown) => (isConclaveError(error) ? error : Promise.reject(error)),
    );
    expect(refused?.code).toBe("forbidden");
    expect(refused?.message).toMatch(/^budget exceeded: session compaction-model has spent \$1\.0000 of its \$0\.50/);
  }, 120_000);

  it("not written in time: the turn compacts offline and completes, costing nothing", async () => {
    const session = "compaction-model-hangs";
    for (const text of [`${HANG} in autumn.`, "Daffodils too.", "And crocuses."]) await turn(session, text);
    await client.requestCompaction(session, { reason: "tidy up" });
    const events = await turn(session, "What about the shed?");
    const compacted = payloadOf(events, "CONTEXT_COMPACTED");
    expect(compacted).toMatchObject({ summariser: "offline", turns_compacted: [1] });
    expect(compacted?.usage).toBeUndefined();
    expect(compacted?.summary).toMatch(/^T1: user: Tulips grow from bulbs in autumn\./);
    expect(model.requests.filter((body) => isSummaryCall(body) && JSON.stringify(body).includes(HANG))).toHaveLength(1);
    expect(payloadOf(events, "TURN_COMPLETED")?.usage.by_actor["context:compaction"]).toBeUndefined();
  }, 120_000);
});
