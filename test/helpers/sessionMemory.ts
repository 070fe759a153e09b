import { type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll } from "vitest";
import type { Episode } from "../../src/contracts/workspace.ts";
import { ensureMemoryStream } from "../../src/eventlog/streams.ts";
import { EpisodeStore } from "../../src/memory/episodeStore.ts";
import { openMemoryGraph } from "../../src/memory/graph/open.ts";
import type { MemoryGraphStore } from "../../src/memory/graph/store.ts";
import { SessionMemory } from "../../src/memory/sessionMemory.ts";
import type { useNatsServer } from "./nats.ts";

/**
 * The memory service's session memory over the file's nats-server (the graph in KV, episodes in
 * JetStream), as a worker holds it; its graph closed after the file's tests. `beforeStreams` runs
 * before the episodes stream is ensured (to make it with settings of the test's own).
 */
export function useSessionMemory(
  nats: ReturnType<typeof useNatsServer>,
  options: { beforeStreams?: (jsm: JetStreamManager) => Promise<void> } = {},
) {
  let graph: MemoryGraphStore | undefined;
  let memory: SessionMemory | undefined;
  let manager: JetStreamManager | undefined;
  beforeAll(async () => {
    const nc = await nats.connect("worker");
    manager = await jetstreamManager(nc);
    await options.beforeStreams?.(manager);
    await ensureMemoryStream(manager);
    graph = await openMemoryGraph({ nc });
    memory = new SessionMemory(graph, new EpisodeStore(jetstream(nc), manager));
  });
  afterAll(async () => {
    await graph?.close();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the session memory is not started yet");
    return value;
  };
  return {
    get graph(): MemoryGraphStore {
      return started(graph);
    },
    get memory(): SessionMemory {
      return started(memory);
    },
    get jsm(): JetStreamManager {
      return started(manager);
    },
  };
}

/** An episode of a session's turn: the user's text and a plain reply. */
export const plainEpisode = (session: string, turnId: number, text: string): Episode => ({
  session_id: session,
  turn_id: turnId,
  user_text: text,
  response: "Okay.",
  intent: "support",
  ts: 1_700_000_000_000 + turnId,
});
