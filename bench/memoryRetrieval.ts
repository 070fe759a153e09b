import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { ensureMemoryStream } from "../src/eventlog/streams.ts";
import { EpisodeStore } from "../src/memory/episodeStore.ts";
import { openMemoryGraph } from "../src/memory/graph/open.ts";
import { SessionMemory } from "../src/memory/sessionMemory.ts";
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
  /** One `retrieve` (what a turn's context stage asks the memory service): recent episodes from JetStream, facts and threads ranked. */
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

/**
 * Memory retrieval at scale: a session whose graph holds 10 000 facts and
 * threads (on the default NATS KV store, through the memory service's own
 * code), then the retrieval a turn makes before its agents run, timed.
 */
export async function runMemoryRetrieval(plan: BenchPlan): Promise<MemoryRetrievalRun> {
  const server = await startNatsServer({});
  const nc = await connectBus(busOptions("worker", { url: server.url, name: "bench-memory" }));
  try {
    const jsm = await jetstreamManager(nc);
    await ensureMemoryStream(jsm);
    const graph = await openMemoryGraph({ nc });
    const memory = new SessionMemory(graph, new EpisodeStore(jetstream(nc), jsm));
    const session = "bench-memory";
    progress(`memory retrieval: writing ${RETRIEVAL_NODES} nodes`);
    for (let start = 0; start < RETRIEVAL_NODES; start += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, RETRIEVAL_NODES - start) }, (_, offset) => {
          const i = start + offset;
          const topics = [TOPICS[i % TOPICS.length]!, TOPICS[(i * 7) % TOPICS.length]!];
          const thread = i % 10 === 0;
          return graph.upsertNode({
            id: `${thread ? "thread" : "fact"}.k${i}`,
            session_id: session,
            kind: "semantic",
            text: `${thread ? "reminder" : "fact"} ${i} about ${topics.join(" and ")}`,
            topics,
            recurrence: 1 + (i % 5),
            data: thread
              ? { thread: true, key: `k${i}`, status: "open", opened_at_turn: i, updated_turn: i }
              : { fact: true, key: `k${i}`, created_turn: i, updated_turn: i },
          });
        }),
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
