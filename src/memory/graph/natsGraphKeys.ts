/**
 * Where the NATS memory graph keeps what, in the KV bucket
 * `conclave_memory_graph`.
 *
 * Keys: `<session>.n.<encoded node id>` for a node, `<session>.e.<hash>` for
 * an edge (the hash: the first 32 hex digits of the SHA-256 of its
 * `(from, to, kind)`). A node id may hold `.` and `:`, which would split (or
 * break) a KV key token: they are written `=2E` and `=3A` (`=` and two
 * uppercase hex digits, the character's code); `=` itself never occurs in an
 * id, so the encoding is one-to-one and every node id is one key token.
 */
import { createHash } from "node:crypto";
import { buckets } from "../../bus/subjects.ts";
import { edgeIdentity, type MemoryEdge } from "./types.ts";

/** The KV bucket of the memory graph (the worker role is granted it in nats.conf). */
export const MEMORY_GRAPH_BUCKET = buckets.memoryGraph;

/** A node id as one KV key token: `.` → `=2E`, `:` → `=3A` (see the file's comment). */
export const encodeNodeId = (id: string): string =>
  id.replace(/[.:=]/g, (char) => `=${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);

/** The node id a key token encodes (encodeNodeId's inverse). */
export const decodeNodeId = (token: string): string =>
  token.replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

/** The key of a node. */
export const nodeKey = (sessionId: string, id: string): string => `${sessionId}.n.${encodeNodeId(id)}`;

/** The key of an edge. */
export const edgeKey = (edge: MemoryEdge): string =>
  `${edge.session_id}.e.${createHash("sha256").update(edgeIdentity(edge)).digest("hex").slice(0, 32)}`;
