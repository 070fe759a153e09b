/**
 * Skill routing's embeddings in a turn's cost (issue 38, item 5): a worker with a skills directory
 * and an embedding model (CONCLAVE_EMBEDDING_MODEL) embeds each turn's message to pick the lazy
 * skills it loads, through the real `openai` client against the suite's model server. That call is
 * the `skills:routing` row of TURN_COMPLETED's usage and of the session's cost, with the tokens the
 * server reported and the model it ran on; once per message on a worker, however many of its
 * agents the turn asks.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { SKILLS_ROUTING_ACTOR } from "../../src/contracts/usage.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let model: OpenAIServer;
let dir: string;
let client: ConclaveClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "conclave-skills-cost-"));
  writeFileSync(
    join(dir, "umbrella.md"),
    [
      "---",
      "id: umbrella",
      "name: Umbrella advice",
      "description: What to say when rain is coming.",
      "load_strategy: lazy",
      "trigger_intent: rain umbrella weather forecast",
      "---",
      "When rain is forecast, remind the user to carry an umbrella.",
      "",
    ].join("\n"),
  );
  model = await startOpenAIServer(conclaveModel());
  // Only the agents' worker has a model (and the embedding model); the core actors and the runner stay offline.
  await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "inhibition.censor,emotion.stress", "--skills", dir], {
      CONCLAVE_LLM_BASE_URL: model.url,
      CONCLAVE_LLM_MODEL: "scripted-model",
      CONCLAVE_EMBEDDING_MODEL: "embed-model",
    }),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
  ]);
  await processes.spawn("runner", ["runner"]);
  client = await connect({ nc: await nats.connect("client") });
}, 120_000);

afterAll(async () => {
  await client?.close();
  await model?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("skill routing's embeddings in the turn's cost", () => {
  it("counts the routing call once, with the tokens the server reported and its model", async () => {
    const session = "skills-cost";
    // The worker embedded the trigger intents when it started: no session's call.
    const before = model.served.length;
    const events: EngineEvent[] = [];
    for await (const event of client.submit(session, "Will it rain tomorrow? Should I take an umbrella?"))
      events.push(event);
    const completed = events.find((event) => event.kind === "TURN_COMPLETED");
    if (completed?.kind !== "TURN_COMPLETED") throw new Error("the turn did not complete");

    const routing = model.served.slice(before).filter((call) => call.route === "embeddings");
    expect(routing).toHaveLength(1);
    expect(routing[0]?.model).toBe("embed-model");
    expect(routing[0]?.prompt_tokens).toBeGreaterThan(0);
    expect(completed.payload.usage.by_actor[SKILLS_ROUTING_ACTOR]).toEqual({
      prompt_tokens: routing[0]!.prompt_tokens,
      completion_tokens: 0,
      model: "embed-model",
    });
    // The agent call that made it records it, so a takeover counts it again without asking.
    const recorded = events.flatMap((event) =>
      event.kind === "AGENT_COMPLETED" && event.payload.routing_usage ? [event.payload.routing_usage] : [],
    );
    expect(recorded).toEqual([completed.payload.usage.by_actor[SKILLS_ROUTING_ACTOR]]);

    const cost = await client.cost(session);
    expect(cost.by_actor.find((row) => row.name === SKILLS_ROUTING_ACTOR)).toMatchObject({
      model: "embed-model",
      prompt_tokens: routing[0]!.prompt_tokens,
      completion_tokens: 0,
    });
  });
});
