/**
 * A recipe run suspended at a human node is held by no process: its runner
 * is killed (SIGKILL), a new one starts, the run is answered from this test
 * process, and it completes once, with a contiguous log. Also: a node's
 * timeout resumes it as timed out, on whichever runner is up.
 */
import { readFileSync } from "node:fs";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { encodeJson } from "../../src/bus/codec.ts";
import { streams } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { DEFAULT_PARTITIONS } from "../../src/contracts/partitions.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import type { WalEntry } from "../../src/contracts/wal.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { parseRecipeText } from "../../src/recipes/load.ts";
import { resumeSuspended } from "../../src/runtime/recipeHost/resume.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";
import { until } from "../helpers/wait.ts";
import { sessionConsumer, walSubject } from "../helpers/wal.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;
/** The runner up after the first test (the second runs on it). */
let runner: ConclaveProcess | null = null;

const approval = () => parseRecipeText(readFileSync("recipes/approval.yaml", "utf8")) as JsonObject;

beforeAll(async () => {
  await processes.spawn("agents", ["worker", "--agents", "./agents/recipes/index.ts"]);
  client = await connect({ nc: await nats.connect("client") });
});

const logOf = (session: string, turnId: number) => turnLog(client, session, turnId);

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
    runner = await processes.spawn("runner-2", ["runner"]);

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

  it("runs an answered run once when its first entry is delivered again (its runner died before its ack went out)", async () => {
    const session = "approval-3";
    runner ??= await processes.spawn("runner-3", ["runner"]);
    const run = await client.run(session, approval(), { inputs: { topic: "a stale copy" } });
    expect(run.status).toBe("suspended");
    const turnId = run.turnId;
    await until(async () => (await client.status(session, turnId))?.status === "suspended", {
      what: "suspended status",
    });
    await runner?.stop(5_000);
    runner = null;

    // What a runner killed between recording the suspension and acking the entry leaves: the run's
    // first entry in the WAL, delivered once already (here: taken from the runners' consumer and
    // handed back, as JetStream does when the ack never arrives).
    const nc = await nats.connect("runner");
    const js = jetstream(nc);
    const first: WalEntry = {
      session_id: session,
      turn_id: turnId,
      text: "",
      on_busy: "enqueue",
      submitted_at: Date.now(),
      recipe: { document: approval(), inputs: { topic: "a stale copy" } },
    };
    const stored = await js.publish(walSubject(session), encodeJson(first), { msgID: `${session}.${turnId}.copy` });
    const consumer = await js.consumers.get(streams.turns, sessionConsumer(session));
    for (;;) {
      const msg = await consumer.next({ expires: 2_000 });
      if (msg?.seq === stored.seq) {
        msg.nak();
        break;
      }
    }

    // The answer lands before any runner is back (as the resume service stores it).
    const statuses = await TurnStatusStore.open(nc);
    const status = await statuses.get(session, turnId);
    await resumeSuspended(
      { js, statuses, partitions: DEFAULT_PARTITIONS },
      session,
      turnId,
      { node: "approve", answer: { approved: true }, user_id: "ana", role: "editor", timed_out: false },
      status?.suspended?.seq,
    );
    runner = await processes.spawn("runner-4", ["runner"]);

    await until(async () => (await client.status(session, turnId))?.status === "done", { what: "done status" });
    const jsm = await jetstreamManager(nc);
    await until(
      async () => {
        const info = await jsm.consumers.info(streams.turns, sessionConsumer(session));
        return info.num_pending === 0 && info.num_ack_pending === 0;
      },
      { what: "the stale copy removed from the WAL" },
    );
    const kinds = (await logOf(session, turnId)).map((event) => event.kind);
    expect(kinds.filter((kind) => kind === "TURN_SUSPENDED")).toHaveLength(1);
    expect(kinds.filter((kind) => kind === "TURN_COMPLETED")).toHaveLength(1);
    expect(kinds).not.toContain("TURN_RESUMED");
    expect((await statuses.get(session, turnId))?.status).toBe("done");
    await nc.close();
  });
});
