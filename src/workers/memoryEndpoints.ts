import { fromPromise } from "xstate";
import { type ServeOptions, serveActor } from "../bus/serveActor.ts";
import type { ServiceGroup } from "../bus/service.ts";
import { subjects } from "../bus/subjects.ts";
import {
  MemoryCommitReply,
  MemoryCommitRequest,
  MemoryRetrieveReply,
  MemoryRetrieveRequest,
  MemorySearchReply,
  MemorySearchRequest,
} from "../contracts/memory.ts";
import type { SessionMemory } from "../memory/sessionMemory.ts";

/**
 * The memory service: before a turn, recent episodes and the facts and open
 * threads that fit its message; after it, the commit that learns; and search.
 */
export function serveMemory(group: ServiceGroup, memory: SessionMemory, options: ServeOptions = {}): void {
  serveActor(
    group,
    {
      name: "retrieve",
      subject: subjects.memoryRetrieve,
      request: MemoryRetrieveRequest,
      logic: fromPromise<MemoryRetrieveReply, MemoryRetrieveRequest>(({ input }) => memory.retrieve(input)),
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
      logic: fromPromise<MemoryCommitReply, MemoryCommitRequest>(({ input }) => memory.commit(input.episode)),
      reply: (output) => MemoryCommitReply.parse(output),
    },
    options,
  );
  serveActor(
    group,
    {
      name: "search",
      subject: subjects.memoryQuery,
      request: MemorySearchRequest,
      logic: fromPromise<MemorySearchReply, MemorySearchRequest>(({ input }) => memory.search(input)),
      reply: (output) => MemorySearchReply.parse(output),
    },
    options,
  );
}
