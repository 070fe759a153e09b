import { beforeAll, describe, expect, it } from "vitest";
import type { MemoryGraphStore } from "../../src/memory/graph/store.ts";
import { UnknownEvolvesEdgeError } from "../../src/memory/insights.ts";
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

const search = async (session: string, query: string) =>
  (await memory.search({ session_id: session, query, limit: 10 })).items
    .filter((item) => item.kind === "fact")
    .map((item) => item.text);

describe("a session's insights", () => {
  it("are raised by commits, refreshed only on change, dismissed for good", async () => {
    const session = "insights-1";
    const replies = [];
    for (const [index, text] of ["I work night shifts.", "My work is tiring.", "Work again kept me late."].entries())
      replies.push(await memory.commit(turn(session, index + 1, text)));
    // The third turn about work raises the recurring topic; the commit names it.
    const listed = await memory.insights.list(session);
    const topic = listed.insights?.find((insight) => insight.kind === "recurring_topic");
    expect(topic?.text).toBe('"work" came up in 3 turns');
    expect(replies[2]?.insights).toContain(topic?.id);
    expect(replies[0]?.insights).toBeUndefined();

    await expect(memory.insights.refresh(session)).resolves.toMatchObject({ refreshed: false });
    const dismissed = await memory.insights.dismiss(session, topic?.id ?? "");
    expect(dismissed.status).toBe("dismissed");
    // Another turn about work changes the graph: derived again, the dismissed topic is not raised.
    const fourth = await memory.commit(turn(session, 4, "Work is fine today."));
    expect(fourth.insights).toBeUndefined();
    expect((await memory.insights.list(session)).insights?.map((insight) => insight.id)).not.toContain(topic?.id);
    expect((await memory.insights.list(session, true)).insights).toContainEqual(
      expect.objectContaining({ id: topic?.id, status: "dismissed", text: '"work" came up in 3 turns' }),
    );
  });

  it("review a fact's change: reject restores the earlier value, accept keeps the new one", async () => {
    const session = "insights-2";
    await memory.commit(turn(session, 1, "I live in Lisbon."));
    await memory.commit(turn(session, 2, "I live in Porto."));
    const [evolved] = (await memory.insights.list(session)).insights ?? [];
    expect(evolved).toMatchObject({ kind: "fact_evolved", text: 'home: "lives in Lisbon" became "lives in Porto"' });
    expect(evolved?.edge).toBe("prior.fact.home.2");
    expect(await search(session, "live")).toEqual(["lives in Porto"]);

    await expect(memory.insights.review(session, "prior.fact.home.2", "reject")).resolves.toEqual({
      edge: "prior.fact.home.2",
      from: "prior.fact.home.2",
      to: "fact.home",
      status: "rejected",
    });
    expect(await search(session, "live")).toEqual(["lives in Lisbon"]);
    // Reviewed: no longer an insight, and no longer reviewable.
    expect((await memory.insights.list(session)).insights).toEqual([]);
    await expect(memory.insights.review(session, "prior.fact.home.2", "accept")).rejects.toThrow(
      UnknownEvolvesEdgeError,
    );

    await memory.commit(turn(session, 3, "I live in Madrid."));
    await memory.insights.review(session, "prior.fact.home.3", "accept");
    expect(await search(session, "live")).toEqual(["lives in Madrid"]);
    expect((await graph.node(session, "prior.fact.home.3"))?.data.status).toBe("accepted");
  });

  it("refuses an unknown edge or insight with a one-line not_found", async () => {
    const unknown = memory.insights.review("insights-2", "prior.fact.nothing.9", "accept");
    await expect(unknown).rejects.toMatchObject({
      code: "not_found",
      message: "session insights-2 has no evolves edge prior.fact.nothing.9 (see conclave memory insights)",
    });
    await expect(
      memory.insights.dismiss("insights-2", "insight.recurring_topic.0000000000000000"),
    ).rejects.toMatchObject({ code: "not_found" });
  });

  it("clears the session's cache: the next read loads it again; an unknown session clears nothing", async () => {
    await expect(memory.insights.clearCache("insights-2")).resolves.toEqual(["graph"]);
    expect(await search("insights-2", "live")).toEqual(["lives in Madrid"]);
    await expect(memory.insights.clearCache("never-seen")).resolves.toEqual([]);
  });
});
