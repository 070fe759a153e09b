import { type ServeOptions, serveFunction } from "../bus/serveActor.ts";
import type { ServiceGroup } from "../bus/service.ts";
import { subjects } from "../bus/subjects.ts";
import { MemoryCommitRequest, MemoryRetrieveRequest, MemorySearchRequest } from "../contracts/memory.ts";
import type { SessionMemory } from "../memory/sessionMemory.ts";

/**
 * The memory service: before a turn, recent episodes and the facts and open
 * threads that fit its message; after it, the commit that learns; and search.
 */
export function serveMemory(group: ServiceGroup, memory: SessionMemory, options: ServeOptions = {}): void {
  serveFunction(
    group,
    {
      name: "retrieve",
      subject: subjects.memoryRetrieve,
      request: MemoryRetrieveRequest,
      handle: (request) => memory.retrieve(request),
    },
    options,
  );
  serveFunction(
    group,
    {
      name: "commit",
      subject: subjects.memoryCommit,
      request: MemoryCommitRequest,
      handle: (request) => memory.commit(request.episode),
    },
    options,
  );
  serveFunction(
    group,
    {
      name: "search",
      subject: subjects.memoryQuery,
      request: MemorySearchRequest,
      handle: (request) => memory.search(request),
    },
    options,
  );
}
