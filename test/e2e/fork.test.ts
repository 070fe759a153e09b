/**
 * Forking a session, on a real nats-server with a runner and a worker as
 * processes (offline mode, nats.conf's roles): a session learns a fact in
 * each of two turns; forked after the first, the fork's next turn recalls
 * the first fact and not the second, and its log starts with SESSION_FORKED.
 * The source is untouched: the same events, the same memory.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { openMemoryGraph } from "../../src/memory/graph/open.ts";
import type { MemoryGraphArtifact } from "../../src/memory/graph/types.ts";
import { replayTape } from "../../src/runtime/checkpoints/tape.ts";
import { SessionStore } from "../../src/runtime/sessionStore.ts";
import { runConclave } from "../helpers/cli.ts";
import { retrievedOf } from "../helpers/memoryRefs.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;

beforeAll(async () => {
  await Promise.all([
    processes.spawn("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("runner", ["runner"]),
  ]);
  client = await connect({ nc: await nats.connect("client") });
});

async function say(session: string, text: string): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, text)) events.push(event);
  return events;
}

async function storedEvents(session: string): Promise<EngineEvent[]> {
  const nc = await nats.connect("runner");
  return readEvents(jetstream(nc), await jetstreamManager(nc), session);
}

async function graphOf(session: string): Promise<MemoryGraphArtifact> {
  const graph = await openMemoryGraph({ nc: await nats.connect("worker") });
  try {
    return await graph.exportSession(session);
  } finally {
    await graph.close();
  }
}

describe("conclave fork", () => {
  it("answers the fork's next turn from the state at the fork point, and leaves the source as it was", async () => {
    await say("fork-src", "I have a sister called Ana.");
    await say("fork-src", "I love jazz.");
    const [eventsBefore, graphBefore] = await Promise.all([storedEvents("fork-src"), graphOf("fork-src")]);
    expect(graphBefore.nodes.map((node) => node.text)).toEqual(
      expect.arrayContaining(["has a sister called Ana", "loves jazz"]),
    );

    const record = await client.fork({ session: "fork-src", at: { turn: 1 }, as: "fork-new" });
    expect(record).toMatchObject({ session_id: "fork-new", from_session: "fork-src", at_turn: 1, next_turn_id: 2 });
    expect(record.copied.episodes).toBe(1);

    const next = await say("fork-new", "Tell me about my family.");
    expect(next[0]?.turn_id).toBe(2);
    const retrieved = await retrievedOf(await nats.connect("runner"), next);
    expect(retrieved.user_facts).toContain("has a sister called Ana");
    expect(retrieved.user_facts).not.toContain("loves jazz");
    expect(retrieved.episodes.map((episode) => episode.turn_id)).toEqual([1]);

    // The fork's log begins with where it came from.
    const forkLog = await storedEvents("fork-new");
    expect(forkLog[0]).toMatchObject({
      turn_id: 1,
      seq: 0,
      kind: "SESSION_FORKED",
      payload: { from_session: "fork-src", at_turn: 1 },
    });

    // The source: the same events, the same memory.
    const [eventsAfter, graphAfter] = await Promise.all([storedEvents("fork-src"), graphOf("fork-src")]);
    expect(eventsAfter).toHaveLength(eventsBefore.length);
    expect(eventsAfter).toEqual(eventsBefore);
    expect(graphAfter).toEqual(graphBefore);

    // The fork's tape folds from its own log: the source's state at turn 1, then its own turn 2.
    const nc = await nats.connect("runner");
    const replayed = await replayTape(
      { js: jetstream(nc), jsm: await jetstreamManager(nc) },
      await SessionStore.open(nc),
      "fork-new",
      "start",
    );
    expect(replayed.state.session.turns_completed).toBe(2);
    expect(replayed.state.cost.turns).toBe(2);
  });

  it("gives the fork's first turn the ledgers the source had at the fork point", async () => {
    const ledgersGiven = (events: EngineEvent[]) => {
      const retrieved = events.find((event) => event.kind === "MEMORY_RETRIEVED");
      return retrieved?.kind === "MEMORY_RETRIEVED" && "ledgers" in retrieved.payload && retrieved.payload.ledgers;
    };
    await say("fork-ledgers", "We are moving the API to the gateway.");
    await client.truth.upsertFact("fork-ledgers", { statement: "The v1 API is retired on 1 March" });
    expect(ledgersGiven(await say("fork-ledgers", "What is left to do?"))).toBe(true);

    await client.fork({ session: "fork-ledgers", at: { turn: 2 }, as: "fork-ledgers-new" });
    // Its first turn, before anything reads the fork's ledgers in full: the digest is in its context.
    expect(ledgersGiven(await say("fork-ledgers-new", "And what is done?"))).toBe(true);
  });

  it("refuses a fork to a session that exists, from the CLI, with one clear line", async () => {
    const refused = await runConclave(nats.url, ["fork", "--session", "fork-src", "--at", "1", "--as", "fork-new"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain("fork-new exists");
    const made = await runConclave(nats.url, [
      "fork",
      "--session",
      "fork-src",
      "--at",
      "2",
      "--as",
      "fork-two",
      "--json",
    ]);
    expect(made.code).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ session_id: "fork-two", at_turn: 2, next_turn_id: 3 });
  });
});
