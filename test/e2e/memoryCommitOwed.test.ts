/**
 * A memory commit whose worker is gone is not lost: the runner keeps it owed
 * (KV `conclave_sessions`) and makes it before the session's next turn reads
 * its memory, once a memory worker is back. The turn's episode is stored
 * exactly once, and what it taught is in the later turn's retrieval.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { streams, subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { retrievedOf } from "../helpers/memoryRefs.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;
let memoryWorker: ConclaveProcess;

beforeAll(async () => {
  [, memoryWorker] = await Promise.all([
    processes.spawn("core", ["worker", "--agents", "*", "--services", "scheduler,council,critics"]),
    processes.spawn("memory-1", ["worker", "--services", "memory"]),
    processes.spawn("runner", ["runner"]),
  ]);
  client = await connect({ nc: await nats.connect("client") });
});

async function say(session: string, text: string): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, text)) events.push(event);
  return events;
}

const completedOf = (events: EngineEvent[]) => {
  const completed = events.find((event) => event.kind === "TURN_COMPLETED");
  if (completed?.kind !== "TURN_COMPLETED") throw new Error("the turn did not complete");
  return completed.payload;
};

/** What the turn's MEMORY_RETRIEVED names, read back from the memory service (the log holds references). */
const retrievedIn = async (events: EngineEvent[]) => retrievedOf(await nats.connect("runner"), events);

/** Messages the episodes stream holds for the session's turn. */
async function storedEpisodes(session: string, turnId: number): Promise<number> {
  const jsm = await jetstreamManager(await nats.connect("worker"));
  const subject = subjects.memoryEpisode(session, turnId);
  const info = await jsm.streams.info(streams.memory, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

describe("a memory commit whose worker died", () => {
  it("is made before the session's next retrieval once a worker is back, its episode stored once", async () => {
    const session = "memory-commit-owed";
    expect(completedOf(await say(session, "I work night shifts at the hospital.")).outcome.status).toBe("Complete");

    // The memory worker dies: the next turn still gets its reply, its commit has no one to go to.
    memoryWorker.child.kill("SIGKILL");
    await memoryWorker.stop();
    const down = completedOf(await say(session, "I live in Lisbon."));
    expect(down.response.length).toBeGreaterThan(0);
    expect(down.outcome.status).toBe("PartialSuccess");
    if (down.outcome.status !== "PartialSuccess") return;
    const commitWarning = down.outcome.warnings.find((warning) => warning.stage === "memory_commit");
    expect(commitWarning).toMatchObject({ code: "no_responders", subject: "memory" });
    expect(commitWarning?.message).toContain("kept and made before the session's next turn");
    expect(await storedEpisodes(session, 2)).toBe(0);

    memoryWorker = await processes.spawn("memory-2", ["worker", "--services", "memory"]);
    const back = await say(session, "What do you remember about me?");
    expect(completedOf(back).outcome.status).toBe("Complete");
    const retrieved = await retrievedIn(back);
    expect(retrieved.user_facts).toContain("lives in Lisbon");
    const byTurn = [...retrieved.episodes].sort((a, b) => a.turn_id - b.turn_id);
    expect(byTurn.map((episode) => [episode.turn_id, episode.user_text])).toEqual([
      [1, "I work night shifts at the hospital."],
      [2, "I live in Lisbon."],
    ]);

    // Stored once: one message in the episodes stream, one episode in the graph.
    expect(await storedEpisodes(session, 2)).toBe(1);
    const found = await client.memory.search(session, "Lisbon");
    expect(found.filter((item) => item.kind === "episode" && item.text.includes("I live in Lisbon"))).toHaveLength(1);
    expect(found.find((item) => item.kind === "fact" && item.text === "lives in Lisbon")?.recurrence).toBe(1);

    // Nothing is owed any more: the turn after commits at once, and its retrieval has every turn before it.
    const later = await say(session, "Thanks.");
    expect(completedOf(later).outcome.status).toBe("Complete");
    expect((await retrievedIn(later)).episodes.map((episode) => episode.turn_id)).toEqual(
      expect.arrayContaining([1, 2, 3]),
    );
    expect(await storedEpisodes(session, 2)).toBe(1);
  });
});
