/**
 * The knowledge index, measured (docs/knowledge.md, "The index"): the two candidates at 10,000
 * chunks (the knowledge workers' exact in-memory index; PostgreSQL 15, which has no pgvector on
 * these machines, scoring float4[] columns in SQL), then the chosen one end to end: indexing
 * throughput with the offline embedder through a runner and a knowledge worker over a real
 * nats-server, and search p95 at 10,000 chunks through the same path.
 *
 *   npx tsx bench/knowledgeIndex.ts [--chunks N]
 */
import { parseArgs } from "node:util";
import pg from "pg";
import { VectorIndex } from "../src/knowledge/vectorIndex.ts";
import { offlineEmbedder } from "../src/llm/embeddings.ts";
import { startPostgresServer } from "../test/helpers/postgresServer.ts";
import { paragraph, runKnowledgeScale } from "./knowledgeScale.ts";

const { values } = parseArgs({ options: { chunks: { type: "string" } } });
const CHUNKS = Number(values.chunks ?? 10_000);
const QUERIES = 200;

const p95 = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.95) - 1)] as number;
};
const ms = (value: number) => `${value.toFixed(2)} ms`;

async function inMemory(dims: number): Promise<number> {
  const embedder = offlineEmbedder(dims);
  const index = new VectorIndex();
  const vectors = await embedder.embed(Array.from({ length: CHUNKS }, (_, i) => paragraph(i)));
  for (const [i, vector] of vectors.entries()) index.set("bench", `c${i}`, vector);
  const queries = await embedder.embed(Array.from({ length: QUERIES }, (_, i) => paragraph(CHUNKS + i, 8)));
  const samples = queries.map((query) => {
    const start = performance.now();
    index.search("bench", query, 5);
    return performance.now() - start;
  });
  return p95(samples);
}

async function postgres(dims: number): Promise<{ p95: number; insertPerS: number }> {
  const server = await startPostgresServer({ prefix: "conclave-bench-knowledge-" });
  const client = new pg.Client({ connectionString: server.url });
  try {
    await client.connect();
    await client.query("CREATE TABLE chunks (id int PRIMARY KEY, collection text, embedding float4[])");
    const embedder = offlineEmbedder(dims);
    const vectors = await embedder.embed(Array.from({ length: CHUNKS }, (_, i) => paragraph(i)));
    const began = performance.now();
    for (let start = 0; start < CHUNKS; start += 500) {
      const rows = vectors.slice(start, start + 500);
      const params: unknown[] = [];
      const tuples = rows.map((vector, i) => {
        params.push(start + i, vector);
        return `($${params.length - 1}, 'bench', $${params.length}::float4[])`;
      });
      await client.query(`INSERT INTO chunks VALUES ${tuples.join(",")}`, params);
    }
    const insertPerS = CHUNKS / ((performance.now() - began) / 1000);
    const queries = await embedder.embed(Array.from({ length: QUERIES }, (_, i) => paragraph(CHUNKS + i, 8)));
    const samples: number[] = [];
    for (const query of queries.slice(0, 50)) {
      const start = performance.now();
      await client.query(
        `SELECT id, (SELECT sum(a * b) FROM unnest(embedding, $1::float4[]) AS t(a, b)) AS score
           FROM chunks WHERE collection = 'bench' ORDER BY score DESC LIMIT 5`,
        [query],
      );
      samples.push(performance.now() - start);
    }
    return { p95: p95(samples), insertPerS };
  } finally {
    await client.end().catch(() => {});
    await server.destroy();
  }
}

for (const dims of [256, 1536]) {
  console.log(`in-memory exact index, ${CHUNKS} chunks x ${dims} dims: search p95 ${ms(await inMemory(dims))}`);
  const sql = await postgres(dims);
  console.log(
    `PostgreSQL 15 (no pgvector; float4[] scored in SQL), ${CHUNKS} chunks x ${dims} dims: search p95 ${ms(sql.p95)}, insert ${sql.insertPerS.toFixed(0)} rows/s`,
  );
}
const e2e = await runKnowledgeScale(CHUNKS, QUERIES);
console.log(
  `end to end (client -> runner -> knowledge worker, ${e2e.embedder}, ${e2e.chunks} chunks): indexing ${e2e.indexPerS.toFixed(0)} chunks/s, search p95 ${ms(e2e.search.p95)}`,
);
