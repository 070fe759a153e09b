/**
 * The client's `knowledge` (docs/knowledge.md): documents chunked here, embedded and stored by the
 * knowledge workers, searched by meaning with citations (collection, document, offset).
 */
import { readFile } from "node:fs/promises";
import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import { describeIssues } from "../contracts/issues.ts";
import {
  type KnowledgeAddReply as AddReply,
  CollectionName,
  KnowledgeAddReply,
  type KnowledgeDocument,
  type KnowledgeHit,
  KnowledgeListReply,
  KnowledgeRemoveReply,
  KnowledgeSearchReply,
} from "../contracts/knowledge.ts";
import { InvalidRequestError, messageOf } from "../errors.ts";
import { type Chunk, checkText, chunkText, type DocumentFormat, formatOf } from "../knowledge/chunk.ts";

export type { DocumentFormat, KnowledgeDocument, KnowledgeHit };

/** Chunks sent per `add` request: the progress step of a long add. */
export const ADD_BATCH_CHUNKS = 64;

/** A document given by its text rather than a path. */
export interface DocumentSource {
  /** Its name in the collection (what hits cite and `remove` takes). */
  document: string;
  text: string;
  /** Default: from `document`'s extension (`.md` is Markdown), else text. */
  format?: DocumentFormat;
}

/** Where an add stands, after each batch of chunks stored. */
export interface AddProgress {
  document: string;
  /** Chunks of this document stored so far, and in all. */
  chunksDone: number;
  chunksTotal: number;
  /** Documents finished before this one, and in all. */
  documentsDone: number;
  documentsTotal: number;
}

/** What `add` did to each document. */
export interface AddedDocument {
  document: string;
  doc_id: string;
  chunks: number;
}

/** Options of `knowledge.add`. */
export interface KnowledgeAddOptions {
  /** Told after each batch of chunks is stored. */
  onProgress?: (progress: AddProgress) => void;
  /** A chunk's target size in characters. Default 800. */
  chunkChars?: number;
}

/** Options of `knowledge.search`. */
export interface KnowledgeSearchOptions {
  /** At most this many hits, best first. Default 5. */
  limit?: number;
  /** Leave out hits scoring below this cosine similarity. */
  minScore?: number;
}

/**
 * Knowledge collections, owned by whoever connects (a tenant's are its own). Bad input rejects with
 * `invalid_request` before anything is sent; without a knowledge worker, with `no_responders`.
 */
export interface KnowledgeClient {
  /**
   * Chunks each source (a path to a text or Markdown file, or a {@link DocumentSource}), has the
   * knowledge workers embed and store the chunks in `collection`, and resolves with what was
   * stored. A document added again under the same name replaces the earlier version.
   */
  add(
    collection: string,
    sources: readonly (string | DocumentSource)[],
    options?: KnowledgeAddOptions,
  ): Promise<AddedDocument[]>;
  /** The documents stored (in one collection, when given), by collection then name. */
  list(collection?: string): Promise<KnowledgeDocument[]>;
  /** The chunks of the collections closest in meaning to `query`, best first, each with its citation. */
  search(
    collections: string | readonly string[],
    query: string,
    options?: KnowledgeSearchOptions,
  ): Promise<KnowledgeHit[]>;
  /**
   * Removes a document (its chunks and their vectors with it), or the whole collection when no
   * document is given; resolves with how many documents and chunks went.
   */
  remove(collection: string, document?: string): Promise<{ documents: number; chunks: number }>;
}

/** How long one batch of chunks may take to embed and store. */
const ADD_TIMEOUT_MS = 140_000;

function checkCollection(collection: string): void {
  const parsed = CollectionName.safeParse(collection);
  if (!parsed.success)
    throw new InvalidRequestError(
      `bad collection ${JSON.stringify(collection).slice(0, 80)}: ${describeIssues(parsed.error, { root: "", join: "; " })}`,
    );
}

/** A source's name, text and chunks; a file that cannot be read or is not text fails with one line naming it. */
async function chunksOf(source: string | DocumentSource, chunkChars: number | undefined) {
  const document = typeof source === "string" ? source : source.document;
  const format = typeof source === "string" || !source.format ? formatOf(document) : source.format;
  let text: string;
  if (typeof source === "string") {
    try {
      text = await readFile(source, "utf8");
    } catch (error) {
      throw new InvalidRequestError(`cannot read ${source}: ${messageOf(error)}`);
    }
  } else text = source.text;
  checkText(document, text);
  const chunks: Chunk[] = chunkText(text, { format, ...(chunkChars ? { maxChars: chunkChars } : {}) });
  if (chunks.length === 0) throw new InvalidRequestError(`${document}: no text to add (it is empty)`);
  return { document, text, chunks };
}

/**
 * The client's `knowledge`, over `conclave.knowledge.<verb>` (a tenant's account maps them to its
 * own), which a runner relays to the knowledge workers.
 */
export function knowledgeClient(nc: NatsConnection, timeoutMs: number): KnowledgeClient {
  /** The store's revision after this client's last add: its searches wait until their worker has seen it. */
  let revision = 0;
  const request = <S extends z.ZodType>(
    verb: "add" | "list" | "search" | "remove",
    payload: unknown,
    schema: S,
    ms = timeoutMs,
  ) => requestJson(nc, subjects.knowledge(verb), payload, schema, { timeoutMs: ms });
  return {
    add: async (collection, sources, options = {}) => {
      checkCollection(collection);
      // Every source is read and chunked first: a bad one stores nothing.
      const documents = [];
      for (const source of sources) documents.push(await chunksOf(source, options.chunkChars));
      const added: AddedDocument[] = [];
      for (const [index, { document, text, chunks }] of documents.entries()) {
        let reply: AddReply | undefined;
        for (let start = 0; start < chunks.length; start += ADD_BATCH_CHUNKS) {
          const batch = chunks.slice(start, start + ADD_BATCH_CHUNKS);
          reply = await request(
            "add",
            { collection, document, total_chunks: chunks.length, chars: text.length, chunks: batch },
            KnowledgeAddReply,
            ADD_TIMEOUT_MS,
          );
          revision = Math.max(revision, reply.revision);
          options.onProgress?.({
            document,
            chunksDone: start + batch.length,
            chunksTotal: chunks.length,
            documentsDone: index,
            documentsTotal: documents.length,
          });
        }
        added.push({ document, doc_id: (reply as AddReply).doc_id, chunks: chunks.length });
      }
      return added;
    },
    list: async (collection) => {
      if (collection !== undefined) checkCollection(collection);
      return (await request("list", collection === undefined ? {} : { collection }, KnowledgeListReply)).documents;
    },
    search: async (collections, query, options = {}) => {
      const names = typeof collections === "string" ? [collections] : [...collections];
      if (names.length === 0) throw new InvalidRequestError("name at least one collection to search");
      for (const name of names) checkCollection(name);
      if (query.trim() === "") throw new InvalidRequestError("the query is empty");
      const reply = await request(
        "search",
        {
          collections: names,
          query,
          limit: options.limit ?? 5,
          ...(options.minScore === undefined ? {} : { min_score: options.minScore }),
          ...(revision > 0 ? { after_revision: revision } : {}),
        },
        KnowledgeSearchReply,
      );
      return reply.hits;
    },
    remove: async (collection, document) => {
      checkCollection(collection);
      return request("remove", { collection, ...(document === undefined ? {} : { document }) }, KnowledgeRemoveReply);
    },
  };
}
