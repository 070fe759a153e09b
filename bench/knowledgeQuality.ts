/**
 * Knowledge retrieval quality (issue 39, item 6): this repository's docs/ indexed by the knowledge
 * service (its store on a real nats-server, its index, its chunking as the client cuts), then each
 * question of bench/knowledgeQuestions.json searched; recall@5 and MRR over where the answering
 * section ranks. Run for the offline embedder, and for an embedding model through the `openai`
 * client against the suite's OpenAI-compatible server (test/helpers/openaiServer.ts), which embeds
 * with a hashed bag of words, not a trained model; and for the environment's own model when
 * `CONCLAVE_EMBEDDING_MODEL` names one.
 */
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { ADD_BATCH_CHUNKS } from "../src/client/knowledge.ts";
import { chunkText, formatOf } from "../src/knowledge/chunk.ts";
import { knowledgeEmbedders } from "../src/knowledge/embedder.ts";
import { KnowledgeService } from "../src/knowledge/service.ts";
import { type Embedder, embeddingConfigFromEnv, openAIEmbedder } from "../src/llm/embeddings.ts";
import { startNatsServer } from "../src/nats/server.ts";
import { scripted, startOpenAIServer } from "../test/helpers/openaiServer.ts";
import { docsCorpus, type KnowledgeQuestion, loadQuestions, MRR_DEPTH, quality, rankOf } from "./knowledgeQuestions.ts";
import { progress } from "./progress.ts";
import { round } from "./stats.ts";

/** The suite server's embeddings, asked at the width of a hosted model's (text-embedding-3-small's 1536). */
export const SUITE_SERVER_DIMENSIONS = 1536;
/** The model name the bench asks the suite server for: it names what that server computes. */
export const SUITE_SERVER_MODEL = "hashed-bag-of-words";

/** One embedder's result on the question set. */
export interface KnowledgeQualityRun {
  /** The embedder's id as stored with each chunk (`offline-terms:512`, `openai:<model>@<dims>`). */
  embedder: string;
  /** What it is, said plainly. */
  described: string;
  chunks: number;
  questions: number;
  recallAt5: number;
  mrr: number;
  /** Questions whose section was not in the first 5 hits, with its rank in the first 10 (null: not there). */
  missed: { id: string; rank: number | null }[];
  /** Time to embed and store every chunk, ms. */
  indexMs: number;
}

/** An embedder that could not be measured, and why. */
export interface KnowledgeQualityError {
  embedder: string;
  described: string;
  error: string;
}

/** docs/ through `embedder` into a fresh store, then every question searched (limit {@link MRR_DEPTH}). */
async function measure(embedder: Embedder, described: string, questions: KnowledgeQuestion[]) {
  const server = await startNatsServer({});
  const nc = await connectBus(busOptions("worker", { servers: server.url, name: "bench-knowledge-quality" }));
  const service = await KnowledgeService.open(nc, { embedder });
  try {
    let chunks = 0;
    let revision = 0;
    const began = performance.now();
    for (const { document, text } of docsCorpus()) {
      const cut = chunkText(text, { format: formatOf(document) });
      for (let start = 0; start < cut.length; start += ADD_BATCH_CHUNKS) {
        const batch = cut.slice(start, start + ADD_BATCH_CHUNKS);
        const request = { collection: "docs", document, total_chunks: cut.length, chars: text.length, chunks: batch };
        revision = Math.max(revision, (await service.add(null, request)).revision);
      }
      chunks += cut.length;
    }
    const indexMs = round(performance.now() - began, 0);
    await service.waitFor(revision);
    const ranks: (number | null)[] = [];
    for (const question of questions) {
      const hits = await service.search(null, { collections: ["docs"], query: question.question, limit: MRR_DEPTH });
      ranks.push(rankOf(question, hits));
    }
    const { recallAt5, mrr } = quality(ranks);
    const missed = questions.flatMap((q, i) => {
      const rank = ranks[i] ?? null;
      return rank !== null && rank <= 5 ? [] : [{ id: q.id, rank }];
    });
    return { embedder: embedder.id, described, chunks, questions: questions.length, recallAt5, mrr, missed, indexMs };
  } finally {
    service.close();
    await nc.close();
    await server.stop();
  }
}

const failed = (embedder: string, described: string, error: unknown): KnowledgeQualityError => ({
  embedder,
  described,
  error: error instanceof Error ? (error.message.split("\n")[0] ?? error.message) : String(error),
});

/** The question set against each embedder: offline, the suite's server, the environment's model if any. */
export async function runKnowledgeQuality(): Promise<(KnowledgeQualityRun | KnowledgeQualityError)[]> {
  const questions = loadQuestions();
  const runs: (KnowledgeQualityRun | KnowledgeQualityError)[] = [];
  const offline = knowledgeEmbedders({}).indexing;
  const offlineSaid = "the offline embedder (no model; hashed stemmed words)";
  runs.push(await measure(offline, offlineSaid, questions).catch((error) => failed(offline.id, offlineSaid, error)));
  progress(`knowledge quality: ${summary(runs.at(-1)!)}`);

  const suite = await startOpenAIServer(scripted({ content: "unused" }));
  const suiteSaid = `through the openai client, the suite's local server (test/helpers/openaiServer.ts): a hashed bag of words at ${SUITE_SERVER_DIMENSIONS} dims, not a trained model`;
  try {
    const embedder = openAIEmbedder({
      baseURL: suite.url,
      apiKey: "bench",
      model: SUITE_SERVER_MODEL,
      dimensions: SUITE_SERVER_DIMENSIONS,
      timeoutMs: 60_000,
      maxRetries: 0,
    });
    runs.push(await measure(embedder, suiteSaid, questions).catch((error) => failed(embedder.id, suiteSaid, error)));
  } finally {
    await suite.stop();
  }
  progress(`knowledge quality: ${summary(runs.at(-1)!)}`);

  // A real model when the environment configures one (e.g. CONCLAVE_EMBEDDING_MODEL on an Ollama server).
  let configured: ReturnType<typeof embeddingConfigFromEnv> = null;
  try {
    configured = embeddingConfigFromEnv();
  } catch (error) {
    runs.push(failed("configured", "the environment's embedding model", error));
  }
  if (configured?.kind === "openai") {
    const embedder = knowledgeEmbedders().indexing;
    const said = `the environment's model ${configured.model} at ${configured.baseURL}, through the openai client`;
    runs.push(await measure(embedder, said, questions).catch((error) => failed(embedder.id, said, error)));
    progress(`knowledge quality: ${summary(runs.at(-1)!)}`);
  }
  return runs;
}

/** One line of a result, for the progress log. */
export function summary(run: KnowledgeQualityRun | KnowledgeQualityError): string {
  if ("error" in run) return `${run.embedder}: failed: ${run.error}`;
  return `${run.embedder}: recall@5 ${round(run.recallAt5, 3)}, MRR ${round(run.mrr, 3)} (${run.questions} questions, ${run.chunks} chunks)`;
}
