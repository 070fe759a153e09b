/**
 * The knowledge service's wire (docs/knowledge.md): collections of documents, chunked and embedded,
 * searched by meaning. A client (or a tenant, through its account's import) requests
 * `conclave.knowledge.<verb>`; the knowledge workers serve it as a queue group.
 */
import { z } from "zod";

/** A collection's name: 1-64 characters of A-Z a-z 0-9 `_` `-` (it is a token of the keys it is stored under). */
export const CollectionName = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, "a collection name is 1-64 characters of A-Z, a-z, 0-9, '_' or '-'");

/** A document's name as the user gave it (its path, usually): what search hits and `list` show. */
export const DocumentName = z.string().min(1).max(1_000);

/** The most chunks one `add` request carries: a client sends a long document in several. */
export const MAX_CHUNKS_PER_ADD = 256;

/** The longest chunk text accepted, in characters. */
export const MAX_CHUNK_CHARS = 8_000;

/** One chunk of a document, as the client cut it. */
export const ChunkInput = z.object({
  /** Its place in the document, from 0. */
  n: z.number().int().min(0),
  /** Where it starts in the document's text, in characters. */
  offset: z.number().int().min(0),
  /** The section it belongs to (a Markdown heading path), if any. */
  heading: z.string().max(500).optional(),
  text: z.string().min(1).max(MAX_CHUNK_CHARS),
});
export type ChunkInput = z.infer<typeof ChunkInput>;

/**
 * Part of a document to store: its chunks `chunks` (in order), and how many it has in all. The
 * part that holds the last chunk ends the document: its record is written then, and chunks of an
 * earlier version past `total_chunks` are removed.
 */
export const KnowledgeAddRequest = z.object({
  collection: CollectionName,
  document: DocumentName,
  total_chunks: z.number().int().min(1).max(1_000_000),
  /** The document's length in characters. */
  chars: z.number().int().min(0),
  chunks: z.array(ChunkInput).min(1).max(MAX_CHUNKS_PER_ADD),
});
export type KnowledgeAddRequest = z.infer<typeof KnowledgeAddRequest>;

export const KnowledgeAddReply = z.object({
  /** The document's id in its collection (a hash of its name). */
  doc_id: z.string(),
  /** Chunks stored by this request. */
  stored: z.number().int(),
  /** The store's revision after the last write: a search may ask to see at least it (`after_revision`). */
  revision: z.number().int(),
});
export type KnowledgeAddReply = z.infer<typeof KnowledgeAddReply>;

/** A stored document, as `list` shows it. */
export const KnowledgeDocument = z.object({
  collection: CollectionName,
  document: DocumentName,
  doc_id: z.string(),
  chunks: z.number().int(),
  chars: z.number().int(),
  /** The embedder its vectors were made by (`offline-terms:512`, `openai:<model>`). */
  embedder: z.string(),
  /** When it was stored (ISO 8601). */
  added_at: z.string(),
});
export type KnowledgeDocument = z.infer<typeof KnowledgeDocument>;

export const KnowledgeListRequest = z.object({
  /** One collection's documents; default: every collection's. */
  collection: CollectionName.optional(),
});
export type KnowledgeListRequest = z.infer<typeof KnowledgeListRequest>;

export const KnowledgeListReply = z.object({ documents: z.array(KnowledgeDocument) });

export const KnowledgeSearchRequest = z.object({
  /** The collections to search (at least one). */
  collections: z.array(CollectionName).min(1).max(32),
  query: z.string().min(1).max(8_000),
  /** At most this many hits, best first. */
  limit: z.number().int().min(1).max(100).default(5),
  /** Hits scoring below this cosine similarity are left out. Default: none. */
  min_score: z.number().min(-1).max(1).optional(),
  /**
   * Wait (a moment) until the answering worker's index has seen the store at least at this
   * revision: what an `add` replied, so a search right after an add finds what it stored.
   */
  after_revision: z.number().int().min(0).optional(),
});
export type KnowledgeSearchRequest = z.input<typeof KnowledgeSearchRequest>;

/** A chunk a search found, with its citation: collection, document, offset. */
export const KnowledgeHit = z.object({
  collection: CollectionName,
  document: DocumentName,
  doc_id: z.string(),
  /** The chunk's place in the document, from 0. */
  chunk: z.number().int(),
  /** Where the chunk starts in the document's text, in characters. */
  offset: z.number().int(),
  heading: z.string().optional(),
  text: z.string(),
  /** Cosine similarity to the query, in [-1, 1]. */
  score: z.number(),
});
export type KnowledgeHit = z.infer<typeof KnowledgeHit>;

export const KnowledgeSearchReply = z.object({ hits: z.array(KnowledgeHit) });

/** The most collections one agent, or one recipe node, may name (`knowledge`). */
export const MAX_NAMED_COLLECTIONS = 16;

/** The collections an agent or a recipe node names (`knowledge`): its turns' context is searched in them. */
export const NamedCollections = z.array(CollectionName).min(1).max(MAX_NAMED_COLLECTIONS);

/**
 * A chunk given to an agent in its context (the `rag_external` zone, docs/knowledge.md), with its
 * citation: collection, document, chunk and character offset, and the heading path above it.
 */
export const KnowledgePassage = KnowledgeHit.omit({ doc_id: true }).extend({ text: z.string().max(MAX_CHUNK_CHARS) });
export type KnowledgePassage = z.infer<typeof KnowledgePassage>;

/** How a passage is cited: `collection/document@offset` (`handbook/ops.md@1200`). */
export const citationOf = (passage: Pick<KnowledgePassage, "collection" | "document" | "offset">): string =>
  `${passage.collection}/${passage.document}@${passage.offset}`;

export const KnowledgeRemoveRequest = z.object({
  collection: CollectionName,
  /** The document's name as added; absent: the whole collection. */
  document: DocumentName.optional(),
});
export type KnowledgeRemoveRequest = z.infer<typeof KnowledgeRemoveRequest>;

export const KnowledgeRemoveReply = z.object({
  /** Documents removed. */
  documents: z.number().int(),
  /** Chunks (and their vectors) removed. */
  chunks: z.number().int(),
});
export type KnowledgeRemoveReply = z.infer<typeof KnowledgeRemoveReply>;

/** The verbs of the knowledge service, as the last token of `conclave.knowledge.<verb>`. */
export const KNOWLEDGE_VERBS = ["add", "list", "search", "remove"] as const;

/**
 * A knowledge request as a runner relays it to the knowledge workers: the client's request and the
 * tenant it came from (null for a client of the runtime's own account), which the runner read from
 * the subject the tenant's account import wrote, so a tenant cannot choose it.
 */
export const knowledgeQuery = <S extends z.ZodType>(request: S) =>
  z.object({
    tenant: z
      .string()
      .regex(/^[A-Za-z0-9_]{1,32}$/)
      .nullable(),
    request,
  });
