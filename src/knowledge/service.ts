/**
 * The knowledge service a knowledge worker runs (docs/knowledge.md): it embeds and stores the chunks
 * a client sends, lists and removes documents, and answers searches from its in-memory index, which
 * it builds from the store when it opens and keeps current by following the bucket, so every
 * worker of the queue group answers from the same data. Every operation is scoped to its owner (a
 * tenant, or the runtime's own account): one tenant cannot list, search or remove another's.
 */
import type { KvWatchEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import type { JsonKv } from "../bus/jsonKv.ts";
import { parseRecord } from "../contracts/format.ts";
import type {
  KnowledgeAddReply,
  KnowledgeAddRequest,
  KnowledgeDocument,
  KnowledgeHit,
  KnowledgeListRequest,
  KnowledgeRemoveReply,
  KnowledgeRemoveRequest,
  KnowledgeSearchRequest,
} from "../contracts/knowledge.ts";
import { messageOf } from "../errors.ts";
import type { Embedder } from "../llm/embeddings.ts";
import {
  type ChunkRecord,
  chunkKey,
  chunkSpaceOf,
  type DocumentRecord,
  documentId,
  documentKey,
  KnowledgeRecord,
  openKnowledgeKv,
  ownerToken,
} from "./store.ts";
import { decodeVector, encodeVector, VectorIndex } from "./vectorIndex.ts";

const decoder = new TextDecoder();

/** How long a search waits for the index to reach the revision it asks for (`after_revision`). */
export const CATCH_UP_WAIT_MS = 2_000;

/** What a search hit shows of a chunk, kept beside its vector. */
type ChunkView = Omit<KnowledgeHit, "score">;

/** How the service is opened. */
export interface KnowledgeServiceOptions {
  /** Embeds chunks being added (long batches: give it a generous deadline). */
  embedder: Embedder;
  /** Embeds queries; default: `embedder`. Must make vectors of the same id. */
  queryEmbedder?: Embedder;
  /** Told of stored records it leaves out (unreadable, or made by another embedder). */
  warn?: (message: string) => void;
}

/** The search request with its defaults applied. */
type SearchRequest = KnowledgeSearchRequest & { limit: number };

export class KnowledgeService {
  readonly #index = new VectorIndex();
  readonly #chunks = new Map<string, ChunkView>();
  /** The last bucket revision the index has applied. */
  #seen = 0;
  #waiters: { revision: number; resolve: () => void }[] = [];
  #stop: (() => void) | undefined;
  readonly #otherEmbedders = new Set<string>();

  private constructor(
    private readonly kv: JsonKv<typeof KnowledgeRecord>,
    private readonly embedder: Embedder,
    private readonly queryEmbedder: Embedder,
    private readonly warn: (message: string) => void,
  ) {}

  /** Opens the bucket and builds the index from it; resolves once the index holds what was stored. */
  static async open(nc: NatsConnection, options: KnowledgeServiceOptions): Promise<KnowledgeService> {
    const kv = await openKnowledgeKv(nc);
    const service = new KnowledgeService(
      kv,
      options.embedder,
      options.queryEmbedder ?? options.embedder,
      options.warn ?? (() => {}),
    );
    await service.#follow();
    return service;
  }

  /** How many chunks the index holds (of this service's embedder). */
  get indexed(): number {
    return this.#index.size;
  }

  async #follow(): Promise<void> {
    const last = (await this.kv.kv.status()).streamInfo.state.last_seq;
    const watch = await this.kv.kv.watch();
    this.#stop = () => watch.stop();
    const ready = this.waitFor(last, Number.POSITIVE_INFINITY);
    void (async () => {
      for await (const entry of watch) this.#apply(entry);
    })().catch((error) => this.warn(`knowledge index stopped following the store: ${messageOf(error)}`));
    await ready;
  }

  #apply(entry: KvWatchEntry): void {
    const space = chunkSpaceOf(entry.key);
    if (space) {
      const at = `${space.owner}/${space.collection}`;
      if (entry.operation === "PUT") this.#indexChunk(at, entry);
      else {
        this.#index.delete(at, entry.key);
        this.#chunks.delete(entry.key);
      }
    }
    this.#seen = Math.max(this.#seen, entry.revision);
    if (this.#waiters.some((waiter) => waiter.revision <= this.#seen)) {
      const due = this.#waiters.filter((waiter) => waiter.revision <= this.#seen);
      this.#waiters = this.#waiters.filter((waiter) => waiter.revision > this.#seen);
      for (const waiter of due) waiter.resolve();
    }
  }

  #indexChunk(space: string, entry: KvWatchEntry): void {
    let parsed: ReturnType<typeof parseRecord<KnowledgeRecord>>;
    try {
      parsed = parseRecord(
        KnowledgeRecord,
        JSON.parse(decoder.decode(entry.value)),
        `KV ${this.kv.bucket}/${entry.key}`,
      );
    } catch (error) {
      this.warn(`knowledge chunk ${entry.key} left out: not JSON (${messageOf(error)})`);
      return;
    }
    const record = parsed.success && parsed.data.kind === "chunk" ? parsed.data : null;
    const vector = record ? decodeVector(record.vector) : null;
    if (!record || !vector) {
      this.warn(`knowledge chunk ${entry.key} left out: not a valid chunk record`);
      return;
    }
    if (record.embedder !== this.embedder.id) {
      const which = `${space} ${record.embedder}`;
      if (!this.#otherEmbedders.has(which)) {
        this.#otherEmbedders.add(which);
        this.warn(
          `knowledge collection ${record.collection} has chunks embedded by ${record.embedder}, not by this worker's ${this.embedder.id}: they are not searched (add the documents again)`,
        );
      }
      return;
    }
    this.#index.set(space, entry.key, vector);
    this.#chunks.set(entry.key, viewOf(record));
  }

  /** Resolves when the index has applied the bucket at `revision`, or after `timeoutMs` anyway. */
  waitFor(revision: number, timeoutMs = CATCH_UP_WAIT_MS): Promise<void> {
    if (revision <= this.#seen) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = Number.isFinite(timeoutMs) ? setTimeout(resolve, timeoutMs) : undefined;
      this.#waiters.push({
        revision,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /** Embeds and stores a part of a document; the part holding its last chunk writes its record. */
  async add(tenant: string | null, request: KnowledgeAddRequest, signal?: AbortSignal): Promise<KnowledgeAddReply> {
    const owner = ownerToken(tenant);
    const docId = documentId(request.document);
    const vectors = await this.embedder.embed(
      request.chunks.map((chunk) => (chunk.heading ? `${chunk.heading}\n\n${chunk.text}` : chunk.text)),
      signal,
    );
    const revisions = await Promise.all(
      request.chunks.map((chunk, i) => {
        const record: ChunkRecord = {
          kind: "chunk",
          collection: request.collection,
          document: request.document,
          doc_id: docId,
          n: chunk.n,
          offset: chunk.offset,
          ...(chunk.heading ? { heading: chunk.heading } : {}),
          text: chunk.text,
          embedder: this.embedder.id,
          vector: encodeVector(vectors[i] as number[]),
        };
        return this.kv.kv.put(chunkKey(owner, request.collection, docId, chunk.n), this.kv.encode(record));
      }),
    );
    let revision = Math.max(...revisions);
    if (request.chunks.some((chunk) => chunk.n === request.total_chunks - 1)) {
      const key = documentKey(owner, request.collection, docId);
      const before = (await this.kv.get(key))?.value;
      // An earlier, longer version's chunks past this one's end go.
      if (before?.kind === "doc") {
        for (let n = request.total_chunks; n < before.chunks; n++)
          await this.kv.delete(chunkKey(owner, request.collection, docId, n));
      }
      const record: DocumentRecord = {
        kind: "doc",
        collection: request.collection,
        document: request.document,
        doc_id: docId,
        chunks: request.total_chunks,
        chars: request.chars,
        embedder: this.embedder.id,
        added_at: new Date().toISOString(),
      };
      revision = Math.max(revision, await this.kv.kv.put(key, this.kv.encode(record)));
    }
    return { doc_id: docId, stored: request.chunks.length, revision };
  }

  /** The owner's documents (of one collection, when given), by collection then name. */
  async list(tenant: string | null, request: KnowledgeListRequest): Promise<KnowledgeDocument[]> {
    const owner = ownerToken(tenant);
    const keys = await this.kv.keys(`doc.${owner}.${request.collection ?? "*"}.*`);
    const documents: KnowledgeDocument[] = [];
    for (const key of keys) {
      const value = (await this.kv.get(key))?.value;
      if (value?.kind !== "doc") continue;
      const { kind: _kind, ...document } = value;
      documents.push(document);
    }
    return documents.sort((a, b) => a.collection.localeCompare(b.collection) || a.document.localeCompare(b.document));
  }

  /** The chunks of the owner's collections closest in meaning to the query, best first, with their citations. */
  async search(tenant: string | null, request: SearchRequest, signal?: AbortSignal): Promise<KnowledgeHit[]> {
    if (request.after_revision !== undefined) await this.waitFor(request.after_revision);
    const owner = ownerToken(tenant);
    const [query] = await this.queryEmbedder.embed([request.query], signal);
    const hits = [...new Set(request.collections)].flatMap((collection) =>
      this.#index.search(`${owner}/${collection}`, query as number[], request.limit, request.min_score ?? -1),
    );
    return hits
      .sort((a, b) => b.score - a.score)
      .slice(0, request.limit)
      .flatMap((hit) => {
        const view = this.#chunks.get(hit.key);
        return view ? [{ ...view, score: hit.score }] : [];
      });
  }

  /** Removes a document (its record, its chunks and their vectors), or a whole collection. */
  async remove(tenant: string | null, request: KnowledgeRemoveRequest): Promise<KnowledgeRemoveReply> {
    const owner = ownerToken(tenant);
    const docId = request.document === undefined ? "*" : documentId(request.document);
    const docs = await this.kv.keys(`doc.${owner}.${request.collection}.${docId}`);
    const chunks = await this.kv.keys(`chunk.${owner}.${request.collection}.${docId}.*`);
    // Chunks first: a document whose removal is cut short still shows in `list`, and can be removed again.
    for (const key of chunks) await this.kv.delete(key);
    for (const key of docs) await this.kv.delete(key);
    return { documents: docs.length, chunks: chunks.length };
  }

  /** Stops following the store. */
  close(): void {
    this.#stop?.();
    for (const waiter of this.#waiters) waiter.resolve();
    this.#waiters = [];
  }
}

function viewOf(record: ChunkRecord): ChunkView {
  return {
    collection: record.collection,
    document: record.document,
    doc_id: record.doc_id,
    chunk: record.n,
    offset: record.offset,
    ...(record.heading ? { heading: record.heading } : {}),
    text: record.text,
  };
}
