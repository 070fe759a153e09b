/**
 * A memory commit is idempotent by turn id, on a real nats-server: committing
 * the same turn again (the runner retrying a commit whose answer it lost, at
 * once or much later, or while the first is still running) stores its episode
 * once and learns from it once: facts' recurrence and the persona's turn
 * count are not counted twice.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { streams, subjects } from "../../src/bus/subjects.ts";
import type { MemoryGraphStore } from "../../src/memory/graph/store.ts";
import type { SessionMemory } from "../../src/memory/sessionMemory.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { plainEpisode, useSessionMemory } from "../helpers/sessionMemory.ts";
import { sleep } from "../helpers/wait.ts";

const nats = useNatsServer();
let graph: MemoryGraphStore;
let memory: SessionMemory;
let jsm: JetStreamManager;
/** The episodes stream's duplicate window here: short, so a test can commit again after it. */
const DUPLICATE_WINDOW_MS = 500;

const stack = useSessionMemory(nats, {
  beforeStreams: async (manager) => {
    // Made before ensureMemoryStream (which leaves an existing stream as it is), with a short duplicate window.
    await manager.streams.add({
      name: streams.memory,
      subjects: [subjects.allEpisodes],
      duplicate_window: DUPLICATE_WINDOW_MS * 1_000_000,
    });
  },
});
beforeAll(() => {
  ({ graph, memory, jsm } = stack);
});

const turn = plainEpisode;

/** How many messages the episodes stream holds for the session's turn. */
async function storedEpisodes(session: string, turnId: number): Promise<number> {
  const subject = subjects.memoryEpisode(session, turnId);
  const info = await jsm.streams.info(streams.memory, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

async function learnedOnce(session: string) {
  expect(await storedEpisodes(session, 1)).toBe(1);
  expect((await graph.node(session, "fact.home"))?.recurrence).toBe(1);
  expect((await graph.node(session, "fact.family.sister"))?.recurrence).toBe(1);
  const state = await graph.node(session, "runtime_state");
  expect(state?.data).toMatchObject({ last_extraction_turn: 1, persona: { turn_count: 1 } });
}

const LESSON = "I live in Lisbon. I have a sister called Ana.";

describe("committing a turn twice", () => {
  it("one after the other: one episode, one learning", async () => {
    const session = "twice-serial";
    await memory.commit(turn(session, 1, LESSON));
    const again = await memory.commit(turn(session, 1, LESSON));
    expect(again.stored).toBe(true);
    await learnedOnce(session);
  });

  it("after the episodes stream's duplicate window: still one episode", async () => {
    const session = "twice-later";
    await memory.commit(turn(session, 1, LESSON));
    await sleep(DUPLICATE_WINDOW_MS + 300);
    const again = await memory.commit(turn(session, 1, LESSON));
    expect(again.stored).toBe(true);
    await learnedOnce(session);
  });

  it("both at once (a retry while the first is still running): one episode, one learning", async () => {
    const session = "twice-at-once";
    await Promise.all([memory.commit(turn(session, 1, LESSON)), memory.commit(turn(session, 1, LESSON))]);
    await learnedOnce(session);
  });

  it("after a first commit that stored its facts but not its runtime state: facts not counted twice", async () => {
    const session = "twice-partial";
    await memory.commit(turn(session, 1, LESSON));
    // What a first commit leaves when its runtime-state write failed (or its worker died just before it).
    await graph.upsertNode({
      id: "runtime_state",
      session_id: session,
      kind: "runtime_state",
      text: "runtime state",
      topics: [],
      data: { last_extraction_turn: 0, persona: { traits: {}, turn_count: 0, last_evolved_turn: 0 } },
    });
    await memory.commit(turn(session, 1, LESSON));
    await learnedOnce(session);
    // A later turn saying it again is counted, as ever.
    await memory.commit(turn(session, 2, "I live in Lisbon."));
    expect((await graph.node(session, "fact.home"))?.recurrence).toBe(2);
  });
});
