import type { NatsConnection } from "@nats-io/nats-core";
import { type ServeOptions, serveFunction } from "../bus/serveActor.ts";
import type { ServiceGroup } from "../bus/service.ts";
import { subjects } from "../bus/subjects.ts";
import { MemoryCommitRequest, MemoryRetrieveRequest, MemorySearchRequest } from "../contracts/memory.ts";
import type { SessionMemory } from "../memory/sessionMemory.ts";
import { followErasures } from "../runtime/runner/sessionErasures.ts";

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
      // The turn's signal: its embeddings call stops when the turn is cancelled or over.
      handle: (request, signal) => memory.retrieve(request, signal),
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

/**
 * The memory service's part in an erase: on the erase broadcast
 * (`conclave.session.erased`) it erases the session from its graph store
 * (SessionMemory.forget: on PostgreSQL the session's rows are deleted, the
 * erasing runner may not have that backend configured; on either backend
 * the in-memory copy is dropped), then answers the erasing runner as `as`
 * (e.g. `conclave-memory <service id>`), which waits for that answer. A
 * failure is warned and not answered. Returns the unsubscribe.
 */
export function followMemoryErasures(
  nc: NatsConnection,
  memory: SessionMemory,
  as: string,
  warn: (message: string) => void,
): () => void {
  return followErasures(nc, (sessionId) => memory.forget(sessionId), {
    as,
    onError: (sessionId, message) => warn(`memory copy of erased session ${sessionId} not dropped: ${message}`),
  });
}
