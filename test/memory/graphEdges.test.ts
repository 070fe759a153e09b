import { beforeAll, describe, expect, it } from "vitest";
import type { MemoryGraphStore } from "../../src/memory/graph/store.ts";
import type { SessionMemory } from "../../src/memory/sessionMemory.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { plainEpisode, useSessionMemory } from "../helpers/sessionMemory.ts";

const nats = useNatsServer();
let graph: MemoryGraphStore;
let memory: SessionMemory;

const stack = useSessionMemory(nats);
beforeAll(() => {
  ({ graph, memory } = stack);
});

const turn = plainEpisode;

describe("the edges a commit writes", () => {
  it("join each episode to the facts, threads and procedures it taught, and export with the graph", async () => {
    const session = "edges-1";
    for (const [index, text] of [
      "I have a sister called Ana. Remind me to call the bank tomorrow.",
      "Please keep your answers short.",
      "I called the bank, done.",
      // Said again as it was: memory counts it (recurrence), the episode gets no edge to it.
      "I have a sister called Ana.",
      "I live in Lisbon.",
      // Changed: an edge from the turn that changed it, and one from its earlier value (evolves).
      "I live in Porto.",
    ].entries()) {
      const reply = await memory.commit(turn(session, index + 1, text));
      expect(reply.warnings).toBeUndefined();
    }
    const edges = (await graph.edges(session)).map(({ from, kind, to }) => `${from} ${kind} ${to}`).sort();
    expect(edges).toEqual([
      "episode.1 mentions fact.family.sister",
      "episode.1 opens thread.reminder.call_bank",
      "episode.2 teaches procedure.style.length",
      "episode.3 resolves thread.reminder.call_bank",
      "episode.5 mentions fact.home",
      "episode.6 mentions fact.home",
      "prior.fact.home.6 evolves fact.home",
    ]);
    expect((await graph.node(session, "prior.fact.home.6"))?.text).toBe("lives in Lisbon");
    expect((await graph.node(session, "fact.family.sister"))?.recurrence).toBe(2);
    // The export is a valid artifact: every edge joins two of its nodes.
    const artifact = await graph.exportSession(session);
    const ids = new Set(artifact.nodes.map((node) => node.id));
    expect(artifact.edges).toHaveLength(7);
    expect(artifact.edges.every((edge) => ids.has(edge.from) && ids.has(edge.to))).toBe(true);
  });
});
