/**
 * Knowledge on the turn's path, in LLM mode (the suite's OpenAI-compatible server, through the
 * real `openai` client): a collection is built from a few documents; a pipeline agent that names
 * it, and a recipe node that names it, are given the chunk that answers, with its citation, and
 * their model's answer cites it; a tenant's turn and search find nothing of another owner's
 * collection. Real nats-server (with two tenant accounts), a real knowledge worker, a real runner.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { connect as connectNats } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type AgentRunContext, defineAgent } from "../../src/agents/defineAgent.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { citationOf } from "../../src/contracts/knowledge.ts";
import { withTenants } from "../../src/nats/tenants.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import type { WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { turnLog } from "../helpers/turns.ts";

const nats = useNatsServer({
  editConfig: (config) =>
    withTenants(config, [
      { name: "alice", password: "alice-secret" },
      { name: "bob", password: "bob-secret" },
    ]),
});

/** The fact only the documents hold. */
const FACT = "The zebra snapshot runs nightly at 02:17 and keeps 9 copies.";
const OPERATIONS = `# Operations

Conclave runs as a runner and several workers over NATS.

## Backups

${FACT} It copies the JetStream store to cold storage.

## Upgrades

Roll the runners one by one; workers follow after the runners.
`;
const KITCHEN = "Sourdough needs a starter fed with flour and water.\n\nA lemon cake wants butter and sugar.";
const QUESTION = "When does the zebra snapshot run?";
const NOTHING = "Nothing in your documents says.";

/** What the agents tell their model: the passages they were given, each with its citation. */
async function answerFrom(ctx: AgentRunContext): Promise<{ reply: string; cited: string[] }> {
  const passages = ctx.knowledge.map((passage) => `[${citationOf(passage)}] ${passage.text}`);
  const reply = await ctx.model!.text({
    system: `Answer from these passages only, and cite the one you use as [collection/document@offset].\n${passages.join("\n")}`,
    user: ctx.input.user_message,
  });
  return { reply, cited: ctx.knowledge.map(citationOf) };
}

const output = z.object({ reply: z.string(), cited: z.array(z.string()) });
/** A pipeline agent that names the collection. */
const librarian = defineAgent({
  name: "acme.librarian",
  description: "Answers from the handbook.",
  knowledge: ["handbook"],
  output,
  run: answerFrom,
});
/** An agent that names none: in the recipe, its node names the collection. */
const reader = defineAgent({
  name: "acme.reader",
  description: "Answers from what it is given.",
  output,
  run: answerFrom,
});

/** The recipe: one node asking the reader, naming the collection. */
const recipe = {
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "ask-handbook" },
  interface: { inputs: { type: "object", properties: { question: { type: "string" } }, required: ["question"] } },
  definitions: { reader: { type: "agent", id: "acme.reader" } },
  workflow: {
    start: "answer",
    steps: { answer: { type: "agent", agent: "reader", inputs: { question: "question" }, knowledge: ["handbook"] } },
  },
};

/** Each agent's own output in a turn's log. */
const outputsOf = (events: EngineEvent[]): Record<string, unknown> =>
  Object.fromEntries(
    events.flatMap((event) =>
      event.kind === "AGENT_COMPLETED" ? [[event.payload.agent_id, event.payload.output] as const] : [],
    ),
  );

let model: OpenAIServer;
let agents: WorkerHandle;
let core: WorkerHandle;
let runner: Runner;
let client: ConclaveClient;
const tenantConnections: NatsConnection[] = [];

const asTenant = async (name: string): Promise<ConclaveClient> => {
  const nc = await connectNats({ servers: nats.url, user: name, pass: `${name}-secret` });
  tenantConnections.push(nc);
  return connect({ nc });
};

/** The citation of the chunk holding the fact, as the collection's owner finds it. */
let factCitation: () => string;

beforeAll(async () => {
  // The model answers with the passage it was shown that holds the fact, citing it; else that it has nothing.
  model = await startOpenAIServer((body) => {
    const system = String(body.messages[0]?.content ?? "");
    const citation = system.match(/\[([^\]\s]+@\d+)\][^[]*02:17/)?.[1];
    return { content: citation ? `The zebra snapshot runs at 02:17 [${citation}].` : NOTHING };
  });
  const llm = { baseURL: model.url, apiKey: "k", model: "scripted", timeoutMs: 10_000, maxRetries: 0 };
  agents = await startWorker({ nc: await nats.connect("worker"), agents: [librarian, reader], llm });
  // Knowledge, memory, scheduler, council and critics: offline, so the model only plays the agents.
  core = await startWorker({
    nc: await nats.connect("worker"),
    agents: [],
    services: ["knowledge", "memory", "scheduler", "council", "critics"],
    llm: false,
  });
  runner = await Runner.start(await nats.connect("runner"), { pipeline: { kind: "agents", council: false } });
  client = await connect({ nc: await nats.connect("client") });
  await client.knowledge.add("handbook", [
    { document: "operations.md", text: OPERATIONS },
    { document: "kitchen.txt", text: KITCHEN },
  ]);
  const [best] = await client.knowledge.search("handbook", QUESTION);
  expect(best?.document).toBe("operations.md");
  expect(best?.text).toContain(FACT);
  // The offset points at the chunk in the document.
  expect(OPERATIONS.slice(best!.offset).startsWith(best!.text.slice(0, 20))).toBe(true);
  const cited = citationOf(best!);
  factCitation = () => cited;
});
afterAll(async () => {
  await client?.close();
  await runner?.stop();
  await Promise.allSettled([agents?.stop(), core?.stop()]);
  await Promise.allSettled(tenantConnections.map((nc) => nc.close()));
  await model?.stop();
});

describe("knowledge on the turn's path", () => {
  it("gives a pipeline agent that names a collection the chunk that answers, and its answer cites it", async () => {
    const turn = client.submit("kb-pipeline", QUESTION);
    const { turn_id: turnId } = await turn.ack;
    const result = await turn.result;
    const answer = `The zebra snapshot runs at 02:17 [${factCitation()}].`;
    expect(result.response).toContain(answer);
    // The librarian names the collection and was given the chunk; the reader names none and was given nothing.
    const outputs = outputsOf(await turnLog(client, "kb-pipeline", turnId));
    expect(outputs["acme.librarian"]).toMatchObject({ reply: answer, cited: expect.arrayContaining([factCitation()]) });
    expect(outputs["acme.reader"]).toEqual({ reply: NOTHING, cited: [] });
    // The model was shown the chunk itself, with its citation.
    expect(model.requests.some((body) => String(body.messages[0]?.content).includes(FACT))).toBe(true);
  });

  it("gives a recipe node that names a collection the chunk, and the node's answer cites it", async () => {
    const run = await client.run("kb-recipe", recipe, { inputs: { question: QUESTION } });
    expect(run.status).toBe("completed");
    if (run.status !== "completed") return;
    expect(run.outcome.status).toBe("Complete");
    expect(run.output.answer).toMatchObject({
      reply: `The zebra snapshot runs at 02:17 [${factCitation()}].`,
      cited: expect.arrayContaining([factCitation()]),
    });
  });

  it("lets no tenant read another owner's collection: its turn gets no passage, its search finds nothing", async () => {
    const bob = await asTenant("bob");
    const alice = await asTenant("alice");
    await alice.knowledge.add("handbook", [{ document: "alice.md", text: `# Alice\n\n${FACT}` }]);
    const [hers] = await alice.knowledge.search("handbook", QUESTION);
    expect(hers?.document).toBe("alice.md");
    // Alice's turn reads her own collection of that name, not the runtime's.
    const own = await alice.submit("kb-alice", QUESTION).result;
    expect(own.response).toContain(`The zebra snapshot runs at 02:17 [${citationOf(hers!)}].`);

    expect(outputsOf(await turnLog(client, "alice-kb-alice", 1))["acme.librarian"]).toMatchObject({
      cited: [citationOf(hers!)],
    });

    // Bob has no collection of that name: his turn's agent is given nothing, and says so.
    const turn = await bob.submit("kb-bob", QUESTION).result;
    expect(turn.response).not.toContain("02:17");
    expect(outputsOf(await turnLog(client, "bob-kb-bob", 1))["acme.librarian"]).toEqual({ reply: NOTHING, cited: [] });
    expect(await bob.knowledge.search("handbook", QUESTION)).toEqual([]);
  });
});
