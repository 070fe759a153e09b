/**
 * Where knowledge lives: one JetStream KV bucket (`conclave_knowledge`) holding each document's
 * record and each chunk's text and vector, under keys that start with their owner (a tenant's
 * name, or `-` for the runtime's own account) and collection. Values are versioned records
 * (JsonKv stamps the format version, docs/protocol.md "Format versions").
 */
import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { JsonKv } from "../bus/jsonKv.ts";
import { buckets } from "../bus/subjects.ts";
import { CollectionName, DocumentName } from "../contracts/knowledge.ts";

/** A document's record: key `doc.<owner>.<collection>.<doc id>`. */
export const DocumentRecord = z.object({
  kind: z.literal("doc"),
  collection: CollectionName,
  document: DocumentName,
  doc_id: z.string(),
  chunks: z.number().int().min(0),
  chars: z.number().int().min(0),
  embedder: z.string(),
  added_at: z.string(),
});
export type DocumentRecord = z.infer<typeof DocumentRecord>;

/** A chunk's record: key `chunk.<owner>.<collection>.<doc id>.<n>`; its vector in base64 float32s. */
export const ChunkRecord = z.object({
  kind: z.literal("chunk"),
  collection: CollectionName,
  document: DocumentName,
  doc_id: z.string(),
  n: z.number().int().min(0),
  offset: z.number().int().min(0),
  heading: z.string().optional(),
  text: z.string(),
  embedder: z.string(),
  vector: z.string(),
});
export type ChunkRecord = z.infer<typeof ChunkRecord>;

export const KnowledgeRecord = z.discriminatedUnion("kind", [DocumentRecord, ChunkRecord]);
export type KnowledgeRecord = z.infer<typeof KnowledgeRecord>;

/** The owner token of keys: the tenant's name, or `-` (no tenant name can be `-`). */
export const ownerToken = (tenant: string | null): string => tenant ?? "-";

/** A document's id in its collection: the first 16 hex digits of its name's SHA-256. */
export const documentId = (document: string): string =>
  createHash("sha256").update(document).digest("hex").slice(0, 16);

export const documentKey = (owner: string, collection: string, docId: string): string =>
  `doc.${owner}.${collection}.${docId}`;
export const chunkKey = (owner: string, collection: string, docId: string, n: number): string =>
  `chunk.${owner}.${collection}.${docId}.${n}`;

/** The owner and collection a chunk key belongs to (`chunk.<owner>.<collection>.…`), or null for another key. */
export function chunkSpaceOf(key: string): { owner: string; collection: string } | null {
  const tokens = key.split(".");
  if (tokens[0] !== "chunk" || tokens.length !== 5) return null;
  return { owner: tokens[1] as string, collection: tokens[2] as string };
}

/** The knowledge bucket, opened (and created when missing). */
export function openKnowledgeKv(nc: NatsConnection): Promise<JsonKv<typeof KnowledgeRecord>> {
  return JsonKv.open(nc, buckets.knowledge, KnowledgeRecord);
}
