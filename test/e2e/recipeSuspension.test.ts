/**
 * A recipe run suspended at a human node is held by no process: its runner
 * is killed (SIGKILL), a new one starts, the run is answered from this test
 * process, and it completes once, with a contiguous log. Also: a node's
 * timeout resumes it as timed out, on whichever runner is up.
 */
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { parseRecipeText } from "../../src/recipes/load.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;

const approval = () => parseRecipeText(readFileSync("recipes/approval.yaml", "utf8")) as JsonObject;

beforeAll(async () => {
  await processes.spawn("agents", ["worker", "--agents", "./recipes/agents/index.ts"]);
  client = await connect({ nc: await nats.connect("client") });
});

async function logOf(session: string, turnId: number): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const { event } of client.events(session, { turnId })) events.push(event);
  return events;
}

describe("a human node", () => {
  it("suspends durably: the runner is killed, another starts, an answer from another process completes the run once", async () => {
    const first = await processes.spawn("runner-1", ["runner"]);
    const run = await client.run("approval-1", approval(), { inputs: { topic: "our new API" } });
    expect(run).toMatchObject({
      status: "suspended",
      node: "approve",
      prompt: "Publish this draft?",
      requiredRole: "editor",
    });
    const turnId = run.turnId;
    await until(async () => (await client.status("approval-1", turnId))?.status === "suspended", {
      what: "suspended status",
    });
    expect((await client.status("approval-1", turnId))?.suspended).toMatchObject({
      node: "approve",
      required_role: "editor",
    });

    // No process holds it: the runner dies for real, a new one starts.
    first.child.kill("SIGKILL");
    await new Promise<void>((resolve) => first.child.once("exit", () => resolve()));
    await processes.spawn("runner-2", ["runner"]);

    // The wrong role is refused and changes nothing.
    await expect(
      client.resume("approval-1", turnId, { input: { approved: true }, userId: "bob", role: "intern" }),
    ).rejects.toThrow(/role 'editor'/);
    expect((await client.status("approval-1", turnId))?.status).toBe("suspended");

    const done = await client.resume("approval-1", turnId, {
      input: { approved: true },
      userId: "ana",
      role: "editor",
    });
    expect(done.status).toBe("completed");
    if (done.status !== "completed") return;
    expect(done.outcome).toEqual({ status: "Complete" });
    expect(done.output.approve).toEqual({ approved: true });
    expect(done.output.publish).toMatchObject({ status: "published", channel: "blog" });

    // A second answer finds nothing waiting.
    await expect(
      client.resume("approval-1", turnId, { input: { approved: false }, userId: "ana", role: "editor" }),
    ).rejects.toThrow(/not waiting/);

    const events = await logOf("approval-1", turnId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    const kinds = events.map((event) => event.kind);
    expect(kinds.filter((kind) => kind === "TURN_COMPLETED")).toHaveLength(1);
    expect(kinds.filter((kind) => kind === "TURN_STARTED")).toHaveLength(1);
    expect(kinds.filter((kind) => kind === "RECIPE_STARTED")).toHaveLength(1);
    // The draft was written once: the agent before the human node is not called again after the resume.
    const completedNodes = events.flatMap((event) => (event.kind === "NODE_COMPLETED" ? [event.payload.node] : []));
    expect(completedNodes).toEqual(["draft", "approve", "publish"]);
    const suspended = kinds.indexOf("TURN_SUSPENDED");
    expect(kinds[suspended + 1]).toBe("HUMAN_INPUT_RECEIVED");
    const received = events[suspended + 1];
    expect(received?.kind === "HUMAN_INPUT_RECEIVED" && received.payload).toMatchObject({
      node: "approve",
      user_id: "ana",
      role: "editor",
      answer: { approved: true },
    });
    await until(async () => (await client.status("approval-1", turnId))?.status === "done", { what: "done status" });
  });

  it("times out: nobody answers, the run goes on by the node's timeout route, with no answer from anyone", async () => {
    const document = approval();
    const steps = (document.workflow as { steps: Record<string, Record<string, unknown>> }).steps;
    steps.approve!.timeout_seconds = 1;
    const run = await client.run("approval-2", document, { inputs: { topic: "a short-lived idea" } });
    expect(run.status).toBe("suspended");
    // Followed until the timeout has resumed it and it has completed.
    const events: EngineEvent[] = [];
    for await (const { event } of client.events("approval-2", { turnId: run.turnId, follow: true })) {
      events.push(event);
      if (event.kind === "TURN_COMPLETED") break;
    }
    const received = events.find((event) => event.kind === "HUMAN_INPUT_RECEIVED");
    expect(received?.kind === "HUMAN_INPUT_RECEIVED" && received.payload).toMatchObject({
      node: "approve",
      timed_out: true,
    });
    const routes = events.flatMap((event) => (event.kind === "ROUTE_TAKEN" ? [event.payload.to] : []));
    expect(routes).toContain("archive");
    const completed = events.at(-1);
    expect(completed?.kind === "TURN_COMPLETED" && completed.payload.output?.archive).toEqual({ status: "archived" });
  });
});
