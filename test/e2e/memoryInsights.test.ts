/**
 * Memory insights end to end, offline, on a real nats-server with a real runner and memory
 * worker, driven through the `conclave memory` commands as a user would run them: turns that
 * change a fact and return to a topic raise insights; one is dismissed and not raised again; a
 * fact's change is rejected then another accepted (search gives the value decided); refresh
 * answers "unchanged" when memory did not change; the cache is cleared and reads still work;
 * every step is an event on the session's log; `session erase` leaves none of it anywhere.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { eventStreamOf, subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { type MemoryInsight, MemoryInsightEvent } from "../../src/contracts/memoryInsights.ts";
import { nextMessage } from "../../src/eventlog/eraseSecure.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { reachable } from "../helpers/reachable.ts";
import { useInProcessStack } from "../helpers/stack.ts";

const nats = useNatsServer();
useInProcessStack(nats);
let client: ConclaveClient;
let observer: NatsConnection;
let inspector: NatsConnection;
const SESSION = "insights-e2e";
const CANARY = "quokkazine";

beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
  observer = await nats.connect("observer");
  inspector = await nats.connect("runner");
});

async function say(text: string): Promise<void> {
  const result = await client.submit(SESSION, text).result;
  expect(result.outcome.status).not.toBe("Failed");
}

/** `conclave memory VERB --session S …`, which must succeed; its standard output. */
async function memory(verb: string, ...args: string[]): Promise<string> {
  const run = await runConclave(nats.url, ["memory", verb, "--session", SESSION, ...args]);
  expect(run.stderr, `conclave memory ${verb}`).not.toMatch(/Error|at /);
  expect(run.code).toBe(0);
  return run.stdout;
}

const insightsJson = async (...args: string[]): Promise<MemoryInsight[]> =>
  (await memory("insights", "--json", ...args))
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as MemoryInsight);

/** The session's insight events on its log, in order. */
async function insightEvents(): Promise<MemoryInsightEvent[]> {
  const jsm = await jetstreamManager(inspector);
  const count = await eventStreamCount(inspector);
  const events: MemoryInsightEvent[] = [];
  for (let seq = 1; ; ) {
    const msg = await nextMessage(jsm, eventStreamOf(SESSION, count), subjects.insightEvents(SESSION, count), seq);
    if (!msg || msg.seq < seq) return events;
    events.push(MemoryInsightEvent.parse(JSON.parse(new TextDecoder().decode(msg.data))));
    seq = msg.seq + 1;
  }
}

const facts = async (query: string) =>
  (await client.memory.search(SESSION, query)).filter((item) => item.kind === "fact").map((item) => item.text);

describe("memory insights through the CLI", () => {
  it("raises, dismisses, reviews both ways, refreshes and clears the cache, each on the log", async () => {
    await say("I work night shifts.");
    await say(`My ${CANARY} project is late.`);
    await say(`The ${CANARY} project needs a plan.`);
    await say("I work days now.");
    await say(`I finished the ${CANARY} draft.`);

    const insights = await insightsJson();
    const topic = insights.find((insight) => insight.text === `"${CANARY}" came up in 3 turns`);
    const evolved = insights.find((insight) => insight.kind === "fact_evolved");
    expect(topic?.kind).toBe("recurring_topic");
    expect(evolved?.text).toBe('work: "works night shifts" became "works days"');
    expect(evolved?.edge).toBe("prior.fact.work.4");
    // The commit that raised each names it on MEMORY_COMMITTED, by id only.
    const committed = [];
    for await (const { event } of client.events(SESSION))
      if (event.kind === "MEMORY_COMMITTED") committed.push(...(event.payload.insights ?? []));
    expect(committed).toEqual(expect.arrayContaining([topic?.id, evolved?.id]));

    // The human listing names the edge to review.
    expect(await memory("insights")).toContain(`(review: --edge prior.fact.work.4)`);

    // Dismissed: not raised again after another turn on the topic.
    expect(await memory("dismiss", topic?.id ?? "")).toBe(`dismissed ${topic?.id}\n`);
    await say(`The ${CANARY} project shipped.`);
    expect((await insightsJson()).map((insight) => insight.id)).not.toContain(topic?.id);
    expect(await insightsJson("--all")).toContainEqual(expect.objectContaining({ id: topic?.id, status: "dismissed" }));

    // Rejected: the earlier value is the fact again.
    expect(await facts("work")).toContain("works days");
    expect(await memory("review", "--edge", "prior.fact.work.4", "--reject")).toBe(
      "rejected prior.fact.work.4 (→ fact.work)\n",
    );
    expect(await facts("work")).toContain("works night shifts");
    expect(await facts("work")).not.toContain("works days");
    // Accepted: a later change stands.
    await say("I work evenings now.");
    const [later] = (await insightsJson()).filter((insight) => insight.kind === "fact_evolved");
    expect(later?.edge).toBe("prior.fact.work.7");
    expect(await memory("review", "--edge", "prior.fact.work.7", "--accept")).toContain("accepted");
    expect(await facts("work")).toContain("works evenings");

    // Refresh: once derived again (the review changed memory), then unchanged.
    await memory("refresh");
    expect(await memory("refresh")).toMatch(/^unchanged since the last refresh\n/);
    expect(JSON.parse(await memory("refresh", "--json"))).toMatchObject({ refreshed: false });

    // The cache: dropped, then reads load it again.
    expect(await memory("clear-cache")).toBe("cleared: graph\n");
    expect(await facts("work")).toContain("works evenings");
    expect(await memory("clear-cache", "--json")).toBe('{"cleared":["graph"]}\n');
    expect(await client.memory.clearSessionCache("never-used")).toEqual({ cleared: [] });

    const kinds = (await insightEvents()).map((event) => event.kind);
    expect(kinds.filter((kind) => kind !== "MEMORY_INSIGHT_RECORDED")).toEqual([
      "MEMORY_INSIGHT_DISMISSED",
      "MEMORY_EDGE_REVIEWED",
      "MEMORY_EDGE_REVIEWED",
      "MEMORY_CACHE_CLEARED",
      "MEMORY_CACHE_CLEARED",
    ]);
    const reviewed = (await insightEvents()).filter((event) => event.kind === "MEMORY_EDGE_REVIEWED");
    expect(reviewed.map((event) => event.payload.status)).toEqual(["rejected", "accepted"]);
  }, 120_000);

  it("refuses an unknown edge, a bad insight id and a missing decision with one line", async () => {
    const unknown = await runConclave(nats.url, [
      "memory",
      "review",
      "--session",
      SESSION,
      "--edge",
      "prior.x.1",
      "--accept",
    ]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
    expect(unknown.stderr).toContain("has no evolves edge prior.x.1");
    // Its code reaches the client as the memory service gave it.
    await expect(
      client.memory.reviewEvolvesEdge(SESSION, { edge: "prior.x.1", decision: "accept" }),
    ).rejects.toMatchObject({ code: "not_found" });
    const bad = await runConclave(nats.url, ["memory", "dismiss", "--session", SESSION, "nope"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    const undecided = await runConclave(nats.url, ["memory", "review", "--session", SESSION, "--edge", "prior.x.1"]);
    expect(undecided.code).toBe(2);
    expect(undecided.stderr).toContain("--accept or --reject");
  }, 60_000);

  it("is erased with the session: no insight, no event, no copy of its text anywhere", async () => {
    expect(JSON.stringify(await client.memory.insights(SESSION, { all: true }))).toContain(CANARY);
    await client.erase(SESSION);
    expect(await client.memory.insights(SESSION, { all: true })).toEqual([]);
    expect(await insightEvents()).toEqual([]);
    expect(await reachable({ client, observer, inspector }, SESSION, CANARY)).toEqual([]);
  }, 60_000);
});
