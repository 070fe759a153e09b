/**
 * A recipe run in a session uses the session's memory as a pipeline turn
 * does, on a real nats-server with worker and runner processes (offline
 * model): a pipeline turn teaches a fact; a recipe run in that session gives
 * it to its agents (retrieved once, recorded) and commits what the run
 * learned (memory search finds it); `policy.memory` off, neither happens; a
 * run suspended at a human node and resumed does not retrieve again, and its
 * agents after the resume get the memory its log holds; nor does a run
 * taken over by another runner after its own was killed (SIGKILL).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { retrievedOf } from "../helpers/memoryRefs.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";
import { waitForEvent } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;
/** The runner the last test kills. */
let runner: ConclaveProcess;

beforeAll(async () => {
  [, , runner] = await Promise.all([
    processes.spawn("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("echo", [
      "worker",
      "--agents",
      "./test/fixtures/recipe-memory/agents.ts,./test/fixtures/takeover/holdOnce.ts",
    ]),
    processes.spawn("runner-1", ["runner"]),
  ]);
  client = await connect({ nc: await nats.connect("client") });
});

/** A pipeline turn that teaches the session's memory a fact ("lives in Lisbon"). */
async function teach(session: string): Promise<void> {
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, "I live in Lisbon.")) events.push(event);
  const committed = events.find((event) => event.kind === "MEMORY_COMMITTED");
  expect(committed?.kind === "MEMORY_COMMITTED" && committed.payload.stored).toBe(true);
}

/** A one-node recipe whose agent repeats what memory told it; `memory`: its `policy.memory`, if any. */
const echoRecipe = (memory?: JsonObject): JsonObject => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "memory-echo" },
  ...(memory ? { policy: { memory } } : {}),
  topology: [{ type: "agent", id: "echo", agent_ref: "test.memory_echo" }],
});

const logOf = (session: string, turnId: number) => turnLog(client, session, turnId);

const count = (events: EngineEvent[], kind: EngineEvent["kind"]) =>
  events.filter((event) => event.kind === kind).length;

/** The session's episodes, as memory search finds them. */
async function episodesFound(session: string): Promise<string[]> {
  const items = await client.memory.search(session, "saffron", { limit: 100 });
  return items.filter((item) => item.kind === "episode").map((item) => item.text);
}

describe("a recipe run and the session's memory", () => {
  it("gives its agents the fact an earlier turn taught, and commits what the run learned", async () => {
    const session = "recipe-memory-on";
    await teach(session);
    const run = await client.run(session, echoRecipe(), { inputs: { question: "Where can I buy saffron?" } });
    expect(run.status).toBe("completed");
    if (run.status !== "completed") return;
    expect(run.output.echo).toMatchObject({ facts: ["lives in Lisbon"], episodes: 1 });

    const events = await logOf(session, run.turnId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    expect(count(events, "MEMORY_RETRIEVED")).toBe(1);
    expect((await retrievedOf(await nats.connect("runner"), events)).user_facts).toEqual(["lives in Lisbon"]);
    // Committed before the run's end, once.
    const kinds = events.map((event) => event.kind);
    expect(count(events, "MEMORY_COMMITTED")).toBe(1);
    expect(kinds.indexOf("MEMORY_COMMITTED")).toBeLessThan(kinds.indexOf("TURN_COMPLETED"));
    const committed = events.find((event) => event.kind === "MEMORY_COMMITTED");
    expect(committed?.kind === "MEMORY_COMMITTED" && committed.payload.stored).toBe(true);
    expect(kinds).not.toContain("STAGE_WARNING");

    // The run's episode is the session's: its inputs and outputs, as search finds them.
    const episodes = await episodesFound(session);
    expect(episodes).toContainEqual(expect.stringContaining("Where can I buy saffron?"));
    expect(episodes).toContainEqual(expect.stringContaining("lives in Lisbon"));
  });

  it("with policy.memory off, its agents get no memory and nothing is committed", async () => {
    const session = "recipe-memory-off";
    await teach(session);
    const run = await client.run(session, echoRecipe({ retrieve: false, commit: false }), {
      inputs: { question: "Where can I buy saffron?" },
    });
    expect(run.status).toBe("completed");
    if (run.status !== "completed") return;
    expect(run.output.echo).toEqual({ facts: [], threads: [], episodes: 0 });
    const events = await logOf(session, run.turnId);
    expect(count(events, "MEMORY_RETRIEVED")).toBe(0);
    expect(count(events, "MEMORY_COMMITTED")).toBe(0);
    expect(await episodesFound(session)).not.toContainEqual(expect.stringContaining("saffron"));
  });

  it("retrieves once for a run suspended and resumed: agents after the resume get the memory its log holds", async () => {
    const session = "recipe-memory-resume";
    await teach(session);
    const recipe: JsonObject = {
      apiVersion: "coreason.ai/v2",
      kind: "Recipe",
      metadata: { name: "memory-approval" },
      workflow: {
        start: "before",
        steps: {
          before: { type: "agent", agent: "test.memory_echo", output_key: "before", next: "approve" },
          approve: { type: "human", prompt: "Go on?", next: "after" },
          after: { type: "agent", agent: "test.memory_echo", output_key: "after" },
        },
      },
    };
    const suspended = await client.run(session, recipe, { inputs: { question: "saffron prices?" } });
    expect(suspended).toMatchObject({ status: "suspended", node: "approve" });
    const done = await client.resume(session, suspended.turnId, { input: { ok: true }, userId: "ana" });
    expect(done.status).toBe("completed");
    if (done.status !== "completed") return;
    expect(done.output.before).toMatchObject({ facts: ["lives in Lisbon"] });
    expect(done.output.after).toMatchObject({ facts: ["lives in Lisbon"] });

    const events = await logOf(session, suspended.turnId);
    expect(count(events, "MEMORY_RETRIEVED")).toBe(1);
    expect(count(events, "MEMORY_COMMITTED")).toBe(1);
    const kinds = events.map((event) => event.kind);
    expect(kinds.indexOf("MEMORY_RETRIEVED")).toBeLessThan(kinds.indexOf("TURN_SUSPENDED"));
    expect(kinds.indexOf("MEMORY_COMMITTED")).toBeGreaterThan(kinds.indexOf("HUMAN_INPUT_RECEIVED"));
  });

  it("retrieves once for a run taken over after its runner was killed mid-node", async () => {
    const session = "recipe-memory-takeover";
    await teach(session);
    const recipe: JsonObject = {
      apiVersion: "coreason.ai/v2",
      kind: "Recipe",
      metadata: { name: "memory-takeover" },
      topology: [
        { type: "agent", id: "before", agent_ref: "test.memory_echo" },
        { type: "agent", id: "hold", agent_ref: "test.hold" },
        { type: "agent", id: "after", agent_ref: "test.memory_echo" },
      ],
    };
    const observer = await nats.connect("observer");
    const holding = observer.subscribe(`conclave.inspect.hold.${session}.>`, { max: 1 });
    await observer.flush();
    const running = client.run(session, recipe, { inputs: { question: "saffron again?" }, timeoutMs: 60_000 });
    // Killed once `hold` was called (else the taker's call would be its first, and hold) and the log holds its
    // start: the retrieval, recorded before `before` was asked, is stored too.
    for await (const _ of holding) break;
    const turnId = 2;
    const watcher = await nats.connect("client");
    await waitForEvent(
      watcher,
      subjects.turnEvents(session, turnId, await eventStreamCount(watcher)),
      (event) => event.kind === "NODE_STARTED" && event.payload.node === "hold",
    );
    runner.child.kill("SIGKILL");
    await new Promise<void>((resolve) => runner.child.once("exit", () => resolve()));
    await processes.spawn("runner-2", ["runner"]);

    const done = await running;
    expect(done.status).toBe("completed");
    if (done.status !== "completed") return;
    expect(done.turnId).toBe(turnId);
    expect(done.output.after).toMatchObject({ facts: ["lives in Lisbon"] });
    const events = await logOf(session, turnId);
    expect(events.map((event) => event.kind)).toContain("TURN_RESUMED");
    expect(count(events, "MEMORY_RETRIEVED")).toBe(1);
    expect(count(events, "MEMORY_COMMITTED")).toBe(1);
  });
});
