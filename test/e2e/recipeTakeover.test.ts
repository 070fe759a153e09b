/**
 * A recipe run whose runner dies mid-node (SIGKILL) is taken over by
 * another runner from its last checkpoint: the nodes it completed are not
 * run again, the one under way is, and the run completes once with a
 * contiguous log.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { waitForEvent } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;

beforeAll(async () => {
  await processes.spawn("agents", [
    "worker",
    "--agents",
    "./agents/recipes/index.ts,./test/fixtures/takeover/holdOnce.ts",
  ]);
  client = await connect({ nc: await nats.connect("client") });
});

const recipe: JsonObject = {
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "takeover" },
  topology: [
    { type: "agent", id: "write", agent_ref: "content.writer", inputs_map: { topic: "topic" }, output_key: "draft" },
    { type: "agent", id: "hold", agent_ref: "test.hold" },
    { type: "agent", id: "publish", agent_ref: "ops.publisher", inputs_map: { draft: "draft" } },
  ],
};

describe("a recipe run taken over", () => {
  it("goes on from its last checkpoint on another runner, completed nodes not run again, and completes once", async () => {
    const first = await processes.spawn("runner-1", ["runner"]);
    const observer = await nats.connect("observer");
    const holding = observer.subscribe("conclave.inspect.hold.takeover-1.>", { max: 1 });
    // `run` follows the run from the log, whichever runner has it; the first runner dies once `hold` is under way.
    const running = client.run("takeover-1", recipe, { inputs: { topic: "Tides" }, timeoutMs: 60_000 });
    for await (const _ of holding) break;
    // Killed once the log holds `hold`'s start, so what came before it (write's completion) is stored too: the
    // writer pipelines events, and a node's end that was never stored is rightly run again.
    const watcher = await nats.connect("client");
    await waitForEvent(
      watcher,
      subjects.turnEvents("takeover-1", 1, await eventStreamCount(watcher)),
      (event) => event.kind === "NODE_STARTED" && event.payload.node === "hold",
    );
    first.child.kill("SIGKILL");
    await new Promise<void>((resolve) => first.child.once("exit", () => resolve()));
    await processes.spawn("runner-2", ["runner"]);

    const events: EngineEvent[] = [];
    for await (const { event } of client.events("takeover-1", { turnId: 1, follow: true })) {
      events.push(event);
      if (event.kind === "TURN_COMPLETED") break;
    }
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    const kinds = events.map((event) => event.kind);
    expect(kinds.filter((kind) => kind === "TURN_COMPLETED")).toHaveLength(1);
    expect(kinds).toContain("TURN_RESUMED");
    const completed = events.flatMap((event) => (event.kind === "NODE_COMPLETED" ? [event.payload.node] : []));
    expect(completed).toEqual(["write", "hold", "publish"]);
    const started = events.flatMap((event) => (event.kind === "NODE_STARTED" ? [event.payload.node] : []));
    expect(started).toEqual(["write", "hold", "hold", "publish"]);
    const last = events.at(-1);
    expect(last?.kind === "TURN_COMPLETED" && last.payload.outcome).toEqual({ status: "Complete" });
    expect(last?.kind === "TURN_COMPLETED" && last.payload.output?.hold).toEqual({ call: 2 });
    expect(await running).toMatchObject({ status: "completed", outcome: { status: "Complete" } });
  });
});
