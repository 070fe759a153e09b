/**
 * Where a session's memory graph is kept. One contract, two backends: NATS KV
 * (the default: the bus every worker has anyway) and PostgreSQL.
 *
 * Every store keeps an in-memory copy of each session it has used, loaded on
 * first use with one bulk read and kept current by its own writes (the NATS
 * store also follows the session's keys, so other processes' writes show up):
 * retrieval ranks a session's nodes on every turn, so `nodes()` answers from
 * memory, without I/O.
 */
import { SessionId } from "../../contracts/ids.ts";
import { describeIssues } from "../../contracts/issues.ts";
import { withDeadline } from "../../deadline.ts";
import { ConclaveError, messageOf, singleLine } from "../../errors.ts";
import {
  GRAPH_ISSUES,
  InvalidMemoryGraphError,
  type MemoryEdge,
  MemoryEdge as MemoryEdgeSchema,
  type MemoryGraphArtifact,
  type MemoryNode,
  MemoryNodeInput,
  type MemoryNodeKind,
} from "./types.ts";

/** The backends a memory graph can be kept in. */
export type MemoryGraphBackend = "nats" | "postgres";

/**
 * A session's memory graph, kept somewhere that outlives the process. Nodes
 * and edges returned are frozen: they are the store's in-memory copy.
 */
export interface MemoryGraphStore {
  readonly backend: MemoryGraphBackend;
  /**
   * Stores the node (new, or replacing the one with its id): checked first
   * (InvalidMemoryGraphError). The store sets `updated_at` (strictly later
   * than the stored node's) and keeps the stored `created_at`. Returns what was stored.
   */
  upsertNode(node: MemoryNodeInput): Promise<MemoryNode>;
  /** The session's node `id`, or null. */
  node(sessionId: string, id: string): Promise<MemoryNode | null>;
  /** The session's nodes (of one kind, if given), ordered by id: from memory once the session is loaded. */
  nodes(sessionId: string, kind?: MemoryNodeKind): Promise<readonly MemoryNode[]>;
  /** Stores the edge (storing one that exists changes nothing). Both ends must exist: InvalidMemoryGraphError otherwise. */
  addEdge(edge: MemoryEdge): Promise<void>;
  /** The session's edges, ordered by `(from, to, kind)`. */
  edges(sessionId: string): Promise<readonly MemoryEdge[]>;
  /** Removes the node and every edge from or to it; false when there was no such node. */
  removeNode(sessionId: string, id: string): Promise<boolean>;
  /** The session's whole graph, nodes and edges ordered as `nodes()` and `edges()`. */
  exportSession(sessionId: string): Promise<MemoryGraphArtifact>;
  /**
   * Replaces the session's graph (`artifact.session_id`) by the artifact's,
   * which is validated first: an invalid one (InvalidMemoryGraphError) changes nothing.
   */
  importSession(artifact: MemoryGraphArtifact): Promise<void>;
  /**
   * Drops the session's in-memory copy (its session was erased): nothing of it
   * is kept here, and its next use loads it again from the store. Whether
   * the store held a copy of it.
   */
  dropSession(sessionId: string): Promise<boolean>;
  /**
   * Erases the session from this store (its session was erased): deletes what
   * the backend holds of it where the erasing runner may not reach it itself
   * (PostgreSQL: its rows), then drops its in-memory copy. A NATS KV graph only
   * drops the copy: the runner overwrites the session's keys (eraseStores.ts),
   * and a delete here would write markers naming its nodes. How many nodes and
   * edges it deleted.
   */
  eraseSession(sessionId: string): Promise<number>;
  /** Stops following sessions and releases the store's connections (not a NATS connection it was given). */
  close(): Promise<void>;
}

/**
 * How long one store call may take (a session's first load included) before
 * it fails with a MemoryGraphTimeoutError, unless the store is given its own
 * `timeoutMs`.
 */
export const DEFAULT_MEMORY_GRAPH_TIMEOUT_MS = 3_000;

/**
 * Most sessions a store keeps in memory (CONCLAVE_MEMORY_GRAPH_SESSIONS):
 * past it, the least recently used one is dropped. A bound, not a size: the
 * store holds the sessions in use (DEFAULT_MEMORY_GRAPH_IDLE_MS). At 256, a
 * worker serving 300 active sessions reloaded (and re-followed) them turn
 * after turn.
 */
export const DEFAULT_MEMORY_GRAPH_SESSIONS = 4_096;

/** A session a store has not used for this long (10 min, a runner's idle session TTL) is dropped from memory. */
export const DEFAULT_MEMORY_GRAPH_IDLE_MS = 600_000;

/** Codes a memory graph store fails with (besides InvalidMemoryGraphError's `invalid_memory_graph`). */
export type MemoryGraphErrorCode =
  /** The backend cannot be reached, refused the call, or the store is closed. */
  | "unavailable"
  /** The backend did not answer within the store's `timeoutMs`. */
  | "timeout"
  /** The backend refuses a value that passed the checks (PostgreSQL's jsonb cannot hold `\u0000`, for one). */
  | "invalid_request";

/** A memory graph store call that failed: one line naming the backend (and the session, when there is one). */
export class MemoryGraphStoreError extends ConclaveError<MemoryGraphErrorCode> {
  constructor(
    code: MemoryGraphErrorCode,
    readonly backend: MemoryGraphBackend,
    message: string,
    options?: ErrorOptions & { sessionId?: string },
  ) {
    super(code, singleLine(message, 400), options);
    this.sessionId = options?.sessionId;
  }
  /** The session the call was about, if any. */
  readonly sessionId: string | undefined;
}

/** A memory graph store call that got no answer within the store's `timeoutMs`. */
export class MemoryGraphTimeoutError extends MemoryGraphStoreError {
  constructor(backend: MemoryGraphBackend, what: string, timeoutMs: number, sessionId?: string) {
    super("timeout", backend, `${what}: no answer within ${timeoutMs} ms`, { sessionId });
  }
}

/** The session id, checked (the rule of every session id: a NATS token, a safe key anywhere). */
export function checkSessionId(sessionId: string): string {
  if (!SessionId.safeParse(sessionId).success) {
    throw new InvalidMemoryGraphError("memory graph request", [
      `session id ${JSON.stringify(String(sessionId).slice(0, 80))} is not a valid session id`,
    ]);
  }
  return sessionId;
}

/**
 * The node to store for `input`, given the stored one (if any): checked,
 * `created_at` kept from the stored node, `updated_at` now (and strictly
 * later than the stored node's, so an update is always visible as one).
 */
export function nextNode(input: unknown, existing: MemoryNode | undefined, now = Date.now()): MemoryNode {
  const parsed = MemoryNodeInput.safeParse(input);
  if (!parsed.success) {
    const id = typeof input === "object" && input !== null ? (input as { id?: unknown }).id : undefined;
    throw new InvalidMemoryGraphError(
      `memory node '${String(id).slice(0, 128)}'`,
      describeIssues(parsed.error, GRAPH_ISSUES),
    );
  }
  const node = parsed.data;
  const updatedAt = existing ? Math.max(now, existing.updated_at + 1) : now;
  const { embedding, ...rest } = node;
  return {
    ...rest,
    ...(embedding === undefined ? {} : { embedding }),
    created_at: existing?.created_at ?? node.created_at ?? updatedAt,
    updated_at: updatedAt,
  };
}

/** The edge, checked (InvalidMemoryGraphError). */
export function checkEdge(edge: unknown): MemoryEdge {
  const parsed = MemoryEdgeSchema.safeParse(edge);
  if (!parsed.success) throw new InvalidMemoryGraphError("memory edge", describeIssues(parsed.error, GRAPH_ISSUES));
  return parsed.data;
}

/** The refusal of an edge whose ends are not both in the session. */
export function danglingEdge(edge: MemoryEdge, missing: readonly string[]): InvalidMemoryGraphError {
  return new InvalidMemoryGraphError(
    `memory edge of session '${edge.session_id}'`,
    missing.map((id) => `'${edge.from}' → '${edge.to}' (${edge.kind}): no node '${id}'`),
  );
}

/**
 * One call to a store's backend, as every store makes it: past `timeoutMs`
 * it rejects with a MemoryGraphTimeoutError (the work is abandoned, see
 * `withDeadline`), and a failure that is not already a Conclave error
 * becomes an "unavailable" MemoryGraphStoreError naming `what`, the failure
 * as `describeError` writes it (redacted, say).
 */
export function graphStoreCall<T>(
  backend: MemoryGraphBackend,
  what: string,
  timeoutMs: number,
  sessionId: string | undefined,
  work: () => Promise<T>,
  describeError: (error: unknown) => string = messageOf,
): Promise<T> {
  return withDeadline(
    timeoutMs,
    async () => {
      try {
        return await work();
      } catch (error) {
        if (error instanceof ConclaveError) throw error;
        throw new MemoryGraphStoreError("unavailable", backend, `${what} failed: ${describeError(error)}`, {
          cause: error,
          sessionId,
        });
      }
    },
    () => new MemoryGraphTimeoutError(backend, what, timeoutMs, sessionId),
  );
}
