/**
 * Knowledge at scale, end to end (issue 39's speed targets): documents of synthetic paragraphs
 * indexed through a client, a runner and a knowledge worker over a real nats-server with the
 * offline embedder, then searches of that collection timed through the same path.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { connect } from "../src/client/client.ts";
import { freePort, startNatsServer } from "../src/nats/server.ts";
import { Runner } from "../src/runtime/runner/runner.ts";
import { startWorker } from "../src/workers/startWorker.ts";
import { round, type Summary, summarize } from "./stats.ts";

/** A deterministic paragraph per chunk: words drawn from a fixed vocabulary, seeded by its number. */
const VOCABULARY =
  "runner worker nats stream turn session agent memory council critic voice recipe node ledger truth task schedule cron backup snapshot upgrade tenant account import export erase retention replay fork tape budget token model embedding chunk vector index search collection document citation offset heading lighthouse kestrel badger aardvark zebra harbour glacier volcano orchard meadow".split(
    " ",
  );

/** Paragraph `seed` of `words` words (90: about 600 characters, one chunk). */
export function paragraph(seed: number, words = 90): string {
  let state = seed * 2654435761;
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    out.push(VOCABULARY[state % VOCABULARY.length] as string);
  }
  return `${out.join(" ")}.`;
}

/** What one run at scale measured. */
export interface KnowledgeScaleRun {
  /** Chunks stored (documents of 100 paragraphs, one chunk each). */
  chunks: number;
  /** The embedder the worker stored them with (`list` of the collection). */
  embedder: string;
  /** Chunks stored per second of `knowledge.add`, from the first request to the last reply. */
  indexPerS: number;
  /** `knowledge.search` from the client (limit 5), after a warm-up of 20. */
  search: Summary;
}

/** `chunks` chunks indexed, then `queries` searches of 8 words, through client → runner → knowledge worker. */
export async function runKnowledgeScale(chunks: number, queries: number): Promise<KnowledgeScaleRun> {
  const dir = mkdtempSync(join(tmpdir(), "conclave-bench-knowledge-"));
  const server = await startNatsServer({ port: await freePort(), storeDir: dir });
  const as = (role: "worker" | "runner" | "client") =>
    connectBus(busOptions(role, { servers: server.url, persistent: false }));
  const worker = await startWorker({ nc: await as("worker"), agents: [], services: ["knowledge"], llm: false });
  const runner = await Runner.start(await as("runner"));
  const nc = await as("client");
  try {
    const client = await connect({ nc });
    const documents = Array.from({ length: Math.ceil(chunks / 100) }, (_, d) => ({
      document: `doc-${d}.txt`,
      text: Array.from({ length: Math.min(100, chunks - d * 100) }, (_, p) => paragraph(d * 100 + p)).join("\n\n"),
    }));
    const began = performance.now();
    const added = await client.knowledge.add("bench", documents);
    const seconds = (performance.now() - began) / 1000;
    const stored = added.reduce((sum, document) => sum + document.chunks, 0);
    const embedder = (await client.knowledge.list("bench"))[0]?.embedder ?? "none";
    const samples: number[] = [];
    for (let i = 0; i < queries + 20; i++) {
      const start = performance.now();
      await client.knowledge.search("bench", paragraph(chunks + i, 8));
      if (i >= 20) samples.push(performance.now() - start); // the first ones warm the JIT
    }
    return { chunks: stored, embedder, indexPerS: round(stored / seconds, 1), search: summarize(samples) };
  } finally {
    await runner.stop();
    await worker.stop();
    await nc.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
