/**
 * The shipped recipes (recipes/*.yaml), run distributed: a runner process
 * and a worker process hosting the recipes' agents (agents/recipes/), on a
 * real nats-server; each run submitted through the client API.
 */
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { parseRecipeText } from "../../src/recipes/load.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;

const recipe = (name: string) => parseRecipeText(readFileSync(`recipes/${name}.yaml`, "utf8")) as JsonObject;

beforeAll(async () => {
  await processes.spawn("agents", ["worker", "--agents", "./agents/recipes/index.ts"]);
  await processes.spawn("runner", ["runner"]);
  client = await connect({ nc: await nats.connect("client") });
});

async function run(session: string, name: string, inputs: JsonObject) {
  const events: EngineEvent[] = [];
  const result = await client.run(session, recipe(name), { inputs, onEvent: (event) => events.push(event) });
  return { result, events };
}

const kinds = (events: EngineEvent[]) => events.map((event) => event.kind);
const routes = (events: EngineEvent[]) =>
  events.flatMap((event) => (event.kind === "ROUTE_TAKEN" ? [`${event.payload.from}->${event.payload.to}`] : []));

describe("shipped recipes, run by a runner and a worker process", () => {
  it("triage: the router sends a billing message to the billing specialist", async () => {
    const { result, events } = await run("recipe-triage", "triage", { message: "I was charged twice this month" });
    expect(result.status).toBe("completed");
    if (result.status !== "completed") return;
    expect(result.outcome).toEqual({ status: "Complete" });
    expect(result.output.triage).toEqual({ category: "billing", reason: "it is about money" });
    expect(result.output.reply).toMatchObject({ answer: expect.stringContaining("refunded") });
    expect(routes(events)).toEqual(["classify->route", "route->billing", "billing->end"]);
    // Provenance is in the log.
    const started = events.find((event) => event.kind === "RECIPE_STARTED");
    expect(started?.kind === "RECIPE_STARTED" && started.payload.provenance).toMatchObject({
      generated_by: "conclave-examples",
      confidence_score: 0.9,
    });
    expect(kinds(events).slice(0, 3)).toEqual(["TURN_STARTED", "RECIPE_STARTED", "PREFLIGHT_CHECKED"]);
    expect(kinds(events)).not.toContain("REQUEST_INTERCEPTED");
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
  });

  it("triage: a technical message takes the other route; an unknown one the default", async () => {
    const technical = await run("recipe-triage-2", "triage", { message: "The app crashes when I log in" });
    expect(routes(technical.events)).toContain("route->technical");
    const general = await run("recipe-triage-3", "triage", { message: "Do you have a newsletter?" });
    expect(routes(general.events)).toContain("route->general");
  });

  it("writer–judge: the judge's critique reaches the writer's next prompt, and the loop ends when it passes", async () => {
    const { result, events } = await run("recipe-writer", "writer-judge", { topic: "Solar panels" });
    expect(result.status === "completed" && result.outcome).toEqual({ status: "Complete" });
    const scores = events.flatMap((event) => (event.kind === "EVALUATION_SCORED" ? [event.payload] : []));
    expect(scores.map((score) => [score.score, score.passed])).toEqual([
      [0.4, false],
      [0.9, true],
    ]);
    expect(routes(events)).toEqual([
      "write->review",
      "review->write",
      "write->review",
      "review->publish",
      "publish->end",
    ]);
    if (result.status !== "completed") return;
    expect(result.output.review_feedback).toBe("Too thin: add details and one example.");
    expect(result.output.draft).toEqual({
      text: "Solar panels: an overview. Details: what it is, why it matters, and one example.",
    });
    expect(result.output.published).toMatchObject({ status: "published" });
    // The writer streams without naming a stream: it is `default`, text/plain, once per attempt.
    const starts = events.flatMap((event) => (event.kind === "STREAM_START" ? [event.payload] : []));
    expect(starts.filter((start) => start.stream_id === "write:default")).toEqual([
      { stream_id: "write:default", content_type: "text/plain", attempt: 1 },
      { stream_id: "write:default", content_type: "text/plain", attempt: 1 },
    ]);
  });

  it("research fan-out: two researchers at once, their streams interleaved, each bracketed by its own start and end", async () => {
    const { result, events } = await run("recipe-research", "research", { question: "solid-state batteries" });
    expect(result.status === "completed" && result.outcome).toEqual({ status: "Complete" });
    const streamEvents = events.filter(
      (event) => event.kind === "STREAM_START" || event.kind === "STREAM_CHUNK" || event.kind === "STREAM_END",
    );
    const ids = [...new Set(streamEvents.map((event) => (event.payload as { stream_id: string }).stream_id))];
    expect(ids.sort()).toEqual(["papers:findings", "papers:thinking", "web:findings", "web:thinking"]);
    for (const id of ids) {
      const own = streamEvents.filter((event) => (event.payload as { stream_id: string }).stream_id === id);
      expect(own[0]?.kind).toBe("STREAM_START");
      expect(own.at(-1)?.kind).toBe("STREAM_END");
      expect(own.slice(1, -1).every((event) => event.kind === "STREAM_CHUNK")).toBe(true);
      const start = own[0];
      expect(start?.kind === "STREAM_START" && start.payload.content_type).toBe(
        id.endsWith("findings") ? "text/markdown" : "text/plain",
      );
    }
    // Interleaved: between one stream's first and last chunk there are chunks of other streams.
    const chunkIds = streamEvents.flatMap((event) => (event.kind === "STREAM_CHUNK" ? [event.payload.stream_id] : []));
    const switches = chunkIds.filter((id, index) => index > 0 && id !== chunkIds[index - 1]).length;
    expect(switches).toBeGreaterThan(ids.length);
    // Both branches started before either finished: they ran at once.
    const started = events.filter((event) => event.kind === "NODE_STARTED").map((event) => event.payload.node);
    const webDone = events.findIndex((event) => event.kind === "NODE_COMPLETED" && event.payload.node === "web");
    const papersStart = events.findIndex((event) => event.kind === "NODE_STARTED" && event.payload.node === "papers");
    expect(started).toEqual(expect.arrayContaining(["plan", "web", "papers", "summarize"]));
    expect(papersStart).toBeLessThan(webDone);
    if (result.status === "completed") expect(result.output.summary).toMatchObject({ sources: 2 });
  });

  it("screens the inputs with the request interceptors before any agent sees them: personal data never reaches the log", async () => {
    const { result, events } = await run("recipe-pii", "triage", {
      message: "Refund my invoice, write to ana.lima@example.com",
    });
    expect(result.status === "completed" && result.outcome).toEqual({ status: "Complete" });
    expect(JSON.stringify(events)).not.toContain("ana.lima@example.com");
    const intercepted = events.find((event) => event.kind === "REQUEST_INTERCEPTED");
    expect(intercepted?.kind === "REQUEST_INTERCEPTED" && intercepted.payload.action).toBe("redact");
    const started = events.find((event) => event.kind === "RECIPE_STARTED");
    expect(started?.kind === "RECIPE_STARTED" && started.payload.inputs).toEqual({
      message: "Refund my invoice, write to [email]",
    });
  });

  it("refuses, before anything runs, a recipe calling an agent no worker hosts, naming the node", async () => {
    const document = recipe("triage");
    const nodes = (document.topology as { nodes: { agent_ref?: string }[] }).nodes;
    nodes[2]!.agent_ref = "support.nobody";
    await expect(client.run("recipe-unknown", document, { inputs: { message: "x" } })).rejects.toThrow(
      /topology\.nodes\[2\].*support\.nobody/,
    );
    expect(await client.turns("recipe-unknown")).toEqual([]);
  });

  it("refuses inputs that do not match interface.inputs", async () => {
    await expect(client.run("recipe-inputs", recipe("triage"), { inputs: { message: 42 } })).rejects.toThrow(
      /recipe\.inputs\.message/,
    );
  });
});
