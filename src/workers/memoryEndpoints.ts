import type { ServiceGroup } from "@nats-io/services";
import { fromPromise } from "xstate";
import { type ServeOptions, serveActor } from "../bus/serveActor.ts";
import { subjects } from "../bus/subjects.ts";
import {
  MemoryCommitReply,
  MemoryCommitRequest,
  MemoryRetrieveReply,
  MemoryRetrieveRequest,
} from "../contracts/memory.ts";
import type { EpisodeStore } from "../memory/episodeStore.ts";

/** The memory service: retrieves recent episodes and commits the turn's episode, both in JetStream. */
export function serveMemory(group: ServiceGroup, store: EpisodeStore, options: ServeOptions = {}): void {
  serveActor(
    group,
    {
      name: "retrieve",
      subject: subjects.memoryRetrieve,
      request: MemoryRetrieveRequest,
      logic: fromPromise<MemoryRetrieveReply, MemoryRetrieveRequest>(async ({ input }) => ({
        episodes: await store.recent(input.session_id, input.turn_id, input.limit),
        user_facts: [],
        open_threads: [],
      })),
      reply: (output) => MemoryRetrieveReply.parse(output),
    },
    options,
  );
  serveActor(
    group,
    {
      name: "commit",
      subject: subjects.memoryCommit,
      request: MemoryCommitRequest,
      logic: fromPromise<MemoryCommitReply, MemoryCommitRequest>(async ({ input }) => {
        const episode = { ...input.episode, ts: input.episode.ts || Date.now() };
        await store.commit(episode);
        return { summary: `episode of turn ${episode.turn_id} stored (intent: ${episode.intent})`, stored: true };
      }),
      reply: (output) => MemoryCommitReply.parse(output),
    },
    options,
  );
}
