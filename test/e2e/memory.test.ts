/**
 * Memory that learns, in the offline mode, on a real nats-server: five
 * turns teach the memory service user facts and an open thread; every
 * process restarts; turn six's context holds them, ranked for its message;
 * the persona's cadence carries across the restart; search finds them.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { openMemoryGraph } from "../../src/memory/graph/open.ts";
import type { MemoryGraphArtifact } from "../../src/memory/graph/types.ts";
import { runConclave } from "../helpers/cli.ts";
import { retrievedOf } from "../helpers/memoryRefs.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_PERSONA_EVERY: "2" }),
);
let client: ConclaveClient;
let running: ConclaveProcess[] = [];

async function startAll(generation: number): Promise<void> {
  running = await Promise.all([
    processes.spawn(`worker-${generation}`, [
      "worker",
      "--agents",
      "*",
      "--services",
      "scheduler,council,critics,memory",
    ]),
    processes.spawn(`runner-${generation}`, ["runner"]),
  ]);
}

beforeAll(async () => {
  await startAll(1);
  client = await connect({ nc: await nats.connect("client") });
});

async function say(session: string, text: string): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  const turn = client.submit(session, text);
  for await (const event of turn) events.push(event);
  return events;
}

/** The session's runtime-state node, read as another process would (a store of its own). */
async function runtimeState(session: string): Promise<Record<string, unknown> | undefined> {
  const graph = await openMemoryGraph({ nc: await nats.connect("worker") });
  try {
    return (await graph.node(session, "runtime_state"))?.data;
  } finally {
    await graph.close();
  }
}

const CONVERSATION = [
  "I work night shifts at the hospital.",
  "I have a sister called Ana.",
  "I love jazz.",
  "Remind me to call the bank tomorrow.",
  "I live in Lisbon.",
];

describe("a memory that learns", () => {
  it("remembers five turns' facts and open thread across a restart of every process, ranked for turn six", async () => {
    const session = "memory-five";
    for (const text of CONVERSATION) {
      const events = await say(session, text);
      const completed = events.find((event) => event.kind === "TURN_COMPLETED");
      expect(completed?.kind === "TURN_COMPLETED" && completed.payload.outcome.status).not.toBe("Failed");
    }

    // Before the restart: five turns, the persona evolved at turns 2 and 4 (every 2), not yet at 5.
    await expect(runtimeState(session)).resolves.toMatchObject({
      last_extraction_turn: 5,
      persona: { turn_count: 5, last_evolved_turn: 4 },
    });

    await Promise.all(running.map((process) => process.stop(5_000)));
    await startAll(2);

    const sixth = await say(session, "I can't sleep after my night shift, and I still need to call the bank.");
    const retrieved = await retrievedOf(await nats.connect("runner"), sixth);
    // The work fact shares the message's topics (night shift → work): first; the rest by recency.
    expect(retrieved.user_facts).toEqual([
      "works night shifts at the hospital",
      "lives in Lisbon",
      "loves jazz",
      "has a sister called Ana",
    ]);
    expect(retrieved.open_threads).toEqual(["reminder: call the bank tomorrow"]);

    // Search: what is about money (the bank) comes first: the thread and the two turns that spoke of it.
    const found = await client.memory.search(session, "bank", { limit: 3 });
    expect(found.map((item) => item.kind).sort()).toEqual(["episode", "episode", "thread"]);
    expect(found).toContainEqual(expect.objectContaining({ kind: "thread", text: "reminder: call the bank tomorrow" }));
    expect(found.every((item) => item.topics.includes("money"))).toBe(true);
  });

  it("evolves the persona exactly on its cadence (every 2 turns), through the restart", async () => {
    // Turn six, the first after the restart: the count went on from 5 (not reset to 1), and it evolved at 6
    // (its cadence kept: not at 5 again, not at 7).
    await expect(runtimeState("memory-five")).resolves.toMatchObject({
      last_extraction_turn: 6,
      persona: { turn_count: 6, last_evolved_turn: 6 },
    });
    const graph = await openMemoryGraph({ nc: await nats.connect("worker") });
    try {
      expect((await graph.node("memory-five", "persona"))?.data.evolved_at_turn).toBe(6);
    } finally {
      await graph.close();
    }
  });

  it("exports a session's graph and imports it as another session's, from the CLI; a dangling edge changes nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "conclave-memory-export-"));
    try {
      const file = join(dir, "five.json");
      const exported = await runConclave(nats.url, ["memory", "export", "--session", "memory-five", "--out", file]);
      expect(exported.code).toBe(0);
      const artifact = JSON.parse(readFileSync(file, "utf8")) as MemoryGraphArtifact;
      expect(artifact.nodes.map((node) => node.id)).toContain("thread.reminder.call_bank");
      expect(artifact.edges).toContainEqual(
        expect.objectContaining({ kind: "opens", to: "thread.reminder.call_bank" }),
      );

      // The same graph under another session: search finds what the first one learnt.
      const copy = {
        ...artifact,
        session_id: "memory-copy",
        nodes: artifact.nodes.map((node) => ({ ...node, session_id: "memory-copy" })),
        edges: artifact.edges.map((edge) => ({ ...edge, session_id: "memory-copy" })),
      };
      writeFileSync(join(dir, "copy.json"), JSON.stringify(copy));
      const imported = await runConclave(nats.url, ["memory", "import", join(dir, "copy.json")]);
      expect(imported.stdout).toContain(`imported ${artifact.nodes.length} nodes, ${artifact.edges.length} edges`);
      const found = await client.memory.search("memory-copy", "bank", { limit: 3 });
      expect(found).toEqual(await client.memory.search("memory-five", "bank", { limit: 3 }));
      expect(found).toContainEqual(
        expect.objectContaining({ kind: "thread", text: "reminder: call the bank tomorrow" }),
      );

      const dangling = { ...copy, edges: [...copy.edges, { ...copy.edges[0], to: "fact.nowhere" }] };
      writeFileSync(join(dir, "dangling.json"), JSON.stringify(dangling));
      const refused = await runConclave(nats.url, ["memory", "import", join(dir, "dangling.json")]);
      expect(refused.code).toBe(2);
      expect(refused.stderr.trim().split("\n")).toHaveLength(1);
      expect(refused.stderr).toContain("fact.nowhere");
      expect(await client.memory.search("memory-copy", "bank", { limit: 3 })).toEqual(found);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
