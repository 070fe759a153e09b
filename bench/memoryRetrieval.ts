import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { ensureMemoryStream } from "../src/eventlog/streams.ts";
import { EpisodeStore } from "../src/memory/episodeStore.ts";
import { openMemoryGraph } from "../src/memory/graph/open.ts";
import type { MemoryNodeInput } from "../src/memory/graph/types.ts";
import { procedureNode } from "../src/memory/procedural/nodes.ts";
import { SessionMemory } from "../src/memory/sessionMemory.ts";
import { episodeNode } from "../src/memory/turnNodes.ts";
import { startNatsServer } from "../src/nats/server.ts";
import type { BenchPlan } from "./plan.ts";
import { progress } from "./progress.ts";
import { type Summary, summarize } from "./stats.ts";

/** How many nodes the session's memory graph holds. */
export const RETRIEVAL_NODES = 10_000;
/** The goal: a turn's memory retrieval at this size, p95. */
export const RETRIEVAL_GOAL_MS = 20;

export interface MemoryRetrievalRun {
  nodes: number;
  calls: number;
  /** One `retrieve` (what a turn's context stage asks the memory service): facts, threads and episodes ranked, the procedures. */
  latency: Summary;
  goalMs: number;
}

const TOPICS = [
  "work",
  "sleep",
  "family",
  "money",
  "music",
  "health",
  "home",
  "study",
  "travel",
  "food",
  "sport",
  "stress",
];
const MESSAGES = [
  "I can't sleep after my night shift",
  "my sister called about money again",
  "what should I cook for dinner tonight",
  "the exam is next week and I'm stressed",
];

/** Of every 100 nodes: 20 episodes, 8 threads, 72 facts; and {@link PROCEDURES} procedures among the first. */
const PROCEDURES = 10;

/** The `i`th node of the bench's session: a procedure, an episode, a thread or a fact, about two topics. */
function benchNode(session: string, i: number): MemoryNodeInput {
  const topics = [TOPICS[i % TOPICS.length]!, TOPICS[(i * 7) % TOPICS.length]!];
  if (i < PROCEDURES) {
    const patch = { label: `style.bench_${i}`, instruction: `Bench instruction ${i}`, data: { value: i } };
    return procedureNode(session, patch, null, { adapter: "style", status: "applied", detail: "", turn_id: i + 1 });
  }
  if (i % 100 < 20) {
    const turn = i + 1;
    const episode = {
      session_id: session,
      turn_id: turn,
      user_text: `turn ${turn} about ${topics.join(" and ")}`,
      response: "Thanks for telling me.",
      intent: "respond",
      ts: turn,
    };
    return episodeNode(episode, { text: episode.user_text, topics, tools: [] });
  }
  const thread = i % 100 < 28;
  return {
    id: `${thread ? "thread" : "fact"}.k${i}`,
    session_id: session,
    kind: "semantic",
    text: `${thread ? "reminder" : "fact"} ${i} about ${topics.join(" and ")}`,
    topics,
    recurrence: 1 + (i % 5),
    data: thread
      ? { thread: true, key: `k${i}`, status: "open", opened_at_turn: i, updated_turn: i }
      : { fact: true, key: `k${i}`, created_turn: i, updated_turn: i },
  };
}

/**
 * Memory retrieval at scale: a session whose graph holds 10 000 nodes — facts,
 * open threads, episodes and a few procedures (on the default NATS KV store,
 * through the memory service's own code) — then the retrieval a turn makes
 * before its agents run, timed: facts and threads ranked within the budget,
 * three episodes ranked, the procedures.
 */
export async function runMemoryRetrieval(plan: BenchPlan): Promise<MemoryRetrievalRun> {
  const server = await startNatsServer({});
  const nc = await connectBus(busOptions("worker", { servers: server.url, name: "bench-memory" }));
  try {
    const jsm = await jetstreamManager(nc);
    await ensureMemoryStream(jsm);
    const graph = await openMemoryGraph({ nc });
    const memory = new SessionMemory(graph, new EpisodeStore(jetstream(nc), jsm));
    const session = "bench-memory";
    progress(`memory retrieval: writing ${RETRIEVAL_NODES} nodes`);
    for (let start = 0; start < RETRIEVAL_NODES; start += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, RETRIEVAL_NODES - start) }, (_, offset) =>
          graph.upsertNode(benchNode(session, start + offset)),
        ),
      );
    }
    const calls = plan.quick ? 200 : 1_000;
    const times: number[] = [];
    for (let i = 0; i < calls + 20; i++) {
      const started = performance.now();
      await memory.retrieve({
        session_id: session,
        turn_id: 10_001,
        user_message: MESSAGES[i % MESSAGES.length]!,
        limit: 3,
      });
      if (i >= 20) times.push(performance.now() - started); // the first ones warm the JIT
    }
    const latency = summarize(times);
    progress(
      `memory retrieval at ${RETRIEVAL_NODES} nodes: p50 ${latency.p50} ms, p95 ${latency.p95} ms (goal ≤ ${RETRIEVAL_GOAL_MS} ms p95)`,
    );
    await graph.close();
    return { nodes: RETRIEVAL_NODES, calls, latency, goalMs: RETRIEVAL_GOAL_MS };
  } finally {
    await nc.close();
    await server.stop();
  }
}
