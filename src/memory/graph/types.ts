/**
 * The memory graph's contents: nodes (what a session's memory holds: episodes,
 * facts, procedures, persona, the extractor's own state) and the edges between
 * them, and the artifact a session's whole graph is exported as.
 */
import { z } from "zod";
import { SessionId } from "../../contracts/ids.ts";
import { describeIssues, type IssueFormat } from "../../contracts/issues.ts";
import { ConclaveError, singleLine } from "../../errors.ts";

/** Largest text of one node, in characters. */
export const MAX_NODE_TEXT = 4_000;
/** Most topics one node carries. */
export const MAX_NODE_TOPICS = 32;
/** Longest embedding a node may carry (OpenAI's text-embedding-3-small size). */
export const MAX_EMBEDDING_DIMENSIONS = 1_536;

/**
 * What a node is: an `episodic` turn, a `semantic` fact, a `procedural`
 * how-to, the `persona` learnt of the user, or `runtime_state` (the extractor's
 * own bookkeeping: turn counts, last extraction, persona snapshot).
 */
export const MemoryNodeKind = z.enum(["episodic", "semantic", "procedural", "persona", "runtime_state"]);
export type MemoryNodeKind = z.infer<typeof MemoryNodeKind>;

/**
 * A node id: 1-128 characters of A-Z, a-z, 0-9, `_`, `.`, `:` or `-`
 * (e.g. `fact:user.city`). Unique within a session.
 */
export const MemoryNodeId = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,128}$/, "a node id must be 1-128 characters of A-Z, a-z, 0-9, '_', '.', ':' or '-'");
export type MemoryNodeId = z.infer<typeof MemoryNodeId>;

/** A topic tag: lowercase, 1-64 characters, no surrounding spaces. */
export const MemoryTopic = z
  .string()
  .min(1)
  .max(64)
  .refine((topic) => topic === topic.toLowerCase() && topic === topic.trim(), "a topic must be lowercase and trimmed");

/**
 * A JSON object, passed through as it is. A `z.custom` rather than a
 * `z.record`, which copies keys into a new object (a stored `__proto__` key
 * would then set the copy's prototype).
 */
const JsonObject = z.custom<Record<string, unknown>>(
  (value) => typeof value === "object" && value !== null && !Array.isArray(value),
  "must be a JSON object",
);

/** Epoch milliseconds. */
const EpochMs = z.number().int().nonnegative();

/**
 * One node of a session's memory graph. `data` is kind-specific: procedural
 * `{ label, patch, results }` (src/memory/procedural), episodic `{ turn_id,
 * tools, intent, ts, user_chars, response_chars }` (enough to rebuild the
 * episode), semantic facts and threads `{ fact | thread, key, … }`, persona
 * `{ traits, evolved_at_turn }`, runtime_state `{ last_extraction_turn,
 * persona }`; a node with an `embedding` also has `data.embedding_model`
 * (the embedder's id: a vector is compared only with vectors of that id).
 */
export const MemoryNode = z.object({
  id: MemoryNodeId,
  session_id: SessionId,
  kind: MemoryNodeKind,
  text: z.string().max(MAX_NODE_TEXT),
  /** Lowercase tags, at most MAX_NODE_TOPICS. */
  topics: z.array(MemoryTopic).max(MAX_NODE_TOPICS),
  /** How many times what the node holds was seen. */
  recurrence: z.number().int().min(1),
  data: JsonObject,
  /** When the node was first stored (epoch ms): kept by every later upsert. */
  created_at: EpochMs,
  /** When the node was last stored (epoch ms): set by the store on every upsert. */
  updated_at: EpochMs,
  /** The embedding of `text`, when memory has an embedder (see `data.embedding_model`). */
  embedding: z.array(z.number().finite()).max(MAX_EMBEDDING_DIMENSIONS).optional(),
});
export type MemoryNode = z.infer<typeof MemoryNode>;

/**
 * What `upsertNode` takes: a node whose timestamps the store sets (a given
 * `created_at` is used only when the node is new), with `recurrence` 1,
 * no topics and empty `data` by default.
 */
export const MemoryNodeInput = MemoryNode.extend({
  topics: MemoryNode.shape.topics.default([]),
  recurrence: MemoryNode.shape.recurrence.default(1),
  data: JsonObject.default(() => ({})),
  created_at: EpochMs.optional(),
  updated_at: EpochMs.optional(),
});
export type MemoryNodeInput = z.input<typeof MemoryNodeInput>;

/** The kind of an edge: 1-64 characters of A-Z, a-z, 0-9, `_`, `.`, `:` or `-` (e.g. `about`, `resolves`, `follows`, `mentions`). */
export const MemoryEdgeKind = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,64}$/, "an edge kind must be 1-64 characters of A-Z, a-z, 0-9, '_', '.', ':' or '-'");

/** A directed edge between two nodes of one session; `(from, to, kind)` identifies it. */
export const MemoryEdge = z.object({
  from: MemoryNodeId,
  to: MemoryNodeId,
  kind: MemoryEdgeKind,
  session_id: SessionId,
});
export type MemoryEdge = z.infer<typeof MemoryEdge>;

/** A session's whole graph, as exported (and imported back). */
export const MemoryGraphArtifact = z.object({
  version: z.literal(1),
  session_id: SessionId,
  nodes: z.array(MemoryNode),
  edges: z.array(MemoryEdge),
});
export type MemoryGraphArtifact = z.infer<typeof MemoryGraphArtifact>;

/** How many problems an InvalidMemoryGraphError's message lists (all are in `problems`). */
const LISTED_PROBLEMS = 10;

/**
 * A node, edge or artifact that cannot be stored. `problems` names each one
 * (`edges[3]: 'a' → 'zz': no node 'zz'`); the message lists the first ten on one line.
 */
export class InvalidMemoryGraphError extends ConclaveError<"invalid_memory_graph"> {
  constructor(
    what: string,
    readonly problems: readonly string[],
  ) {
    const listed = problems.slice(0, LISTED_PROBLEMS).join("; ");
    const more = problems.length > LISTED_PROBLEMS ? ` (and ${problems.length - LISTED_PROBLEMS} more)` : "";
    super("invalid_memory_graph", singleLine(`${what} is invalid: ${listed}${more}`, 2_000));
  }
}

/** The identity of an edge within its session: its `(from, to, kind)`. */
export const edgeIdentity = (edge: Pick<MemoryEdge, "from" | "to" | "kind">): string =>
  JSON.stringify([edge.from, edge.to, edge.kind]);

/** How the memory graph writes a value's zod issues: `nodes[2].id: …`, as its own checks write paths. */
export const GRAPH_ISSUES: IssueFormat = { bracketIndices: true, root: "(value)" };

/**
 * The artifact, checked: its shape (zod), then that node ids are unique, that
 * every node and edge is of the artifact's session, and that every edge joins
 * two of its nodes. Throws an InvalidMemoryGraphError naming every problem.
 */
export function validateArtifact(artifact: unknown): MemoryGraphArtifact {
  const parsed = MemoryGraphArtifact.safeParse(artifact);
  const session =
    typeof artifact === "object" && artifact !== null && "session_id" in artifact
      ? String((artifact as { session_id: unknown }).session_id).slice(0, 80)
      : "?";
  const what = `memory graph artifact of session '${session}'`;
  if (!parsed.success) throw new InvalidMemoryGraphError(what, describeIssues(parsed.error, GRAPH_ISSUES));
  const { session_id: sessionId, nodes, edges } = parsed.data;
  const problems: string[] = [];
  const firstAt = new Map<string, number>();
  nodes.forEach((node, index) => {
    const first = firstAt.get(node.id);
    if (first === undefined) firstAt.set(node.id, index);
    else problems.push(`nodes[${index}]: duplicate node id '${node.id}' (first at nodes[${first}])`);
    if (node.session_id !== sessionId) {
      problems.push(`nodes[${index}]: node '${node.id}' is of session '${node.session_id}', not '${sessionId}'`);
    }
  });
  edges.forEach((edge, index) => {
    const at = `edges[${index}]: '${edge.from}' → '${edge.to}'`;
    if (edge.session_id !== sessionId) {
      problems.push(`${at}: edge is of session '${edge.session_id}', not '${sessionId}'`);
    }
    for (const end of new Set([edge.from, edge.to])) {
      if (!firstAt.has(end)) problems.push(`${at}: no node '${end}'`);
    }
  });
  if (problems.length > 0) throw new InvalidMemoryGraphError(what, problems);
  return parsed.data;
}

/** The artifact moved to another session: every node and edge given `sessionId` (the rest unchanged). */
export function rebaseArtifact(artifact: MemoryGraphArtifact, sessionId: string): MemoryGraphArtifact {
  return {
    version: 1,
    session_id: sessionId,
    nodes: artifact.nodes.map((node) => ({ ...node, session_id: sessionId })),
    edges: artifact.edges.map((edge) => ({ ...edge, session_id: sessionId })),
  };
}
