/**
 * The knowledge section of `npm run bench` (issue 39, item 6 and its targets), its pure parts: the
 * plan, the targets judged on a run, and the section of docs/BENCHMARKS.md.
 */
import type { KnowledgeQualityError, KnowledgeQualityRun } from "./knowledgeQuality.ts";
import type { KnowledgeScaleRun } from "./knowledgeScale.ts";
import { esc, ms, table } from "./markdown.ts";
import { wholeFromEnv } from "./plan.ts";
import { round } from "./stats.ts";
import { judge, notMeasured, type Target } from "./targets.ts";

export const KNOWLEDGE_MARKERS = [
  "<!-- knowledge: written by npm run bench, or alone by npm run bench -- --only knowledge -->",
  "<!-- /knowledge -->",
] as const;

/** The goals of issue 39 ("Targets (in the bench)"). */
export const KNOWLEDGE_GOALS = {
  /** Chunks in the collection the search p95 is judged at. */
  chunks: 10_000,
  /** Search p95 at that size, ms (client → runner → knowledge worker). */
  searchP95Ms: 20,
  /** Chunks indexed per second with the offline embedder. */
  indexPerS: 200,
  /** recall@5 on the docs question set with the offline embedder. */
  recallAt5: 0.8,
} as const;

/** How big the section is. */
export interface KnowledgePlan {
  /** Chunks of the speed run (`BENCH_KNOWLEDGE_CHUNKS`, default 10 000: the target's size). */
  chunks: number;
  /** Timed searches (200; quick 50), after 20 that warm up. */
  queries: number;
}

export function knowledgePlan(quick: boolean, env: NodeJS.ProcessEnv = process.env): KnowledgePlan {
  return {
    chunks: wholeFromEnv("BENCH_KNOWLEDGE_CHUNKS", KNOWLEDGE_GOALS.chunks, env),
    queries: quick ? 50 : 200,
  };
}

/** A part of the section that failed: reported in it, never fatal. */
export interface PartError {
  error: string;
}

/** The section's results. */
export interface KnowledgeRun {
  plan: KnowledgePlan;
  /** The docs question set against each embedder, the offline one first. */
  quality: (KnowledgeQualityRun | KnowledgeQualityError)[];
  scale: KnowledgeScaleRun | PartError;
  durationS: number;
}

const isOffline = (embedder: string) => embedder.startsWith("offline");

/** The three targets of issue 39, judged on a run (not measured, with the reason, where a part failed). */
export function knowledgeTargets(run: KnowledgeRun): Target[] {
  const g = KNOWLEDGE_GOALS;
  const searchStatement = `Knowledge search p95 at ${g.chunks.toLocaleString("en")} chunks (client → runner → knowledge worker, offline embedder)`;
  const indexStatement = "Knowledge indexing with the offline embedder (client → runner → knowledge worker)";
  const recallStatement = `recall@5 on the docs question set (bench/knowledgeQuestions.json) with the offline embedder; MRR reported`;
  const targets: Target[] = [];
  const scale = run.scale;
  if ("error" in scale) {
    const reason = `the speed run failed: ${scale.error}`;
    targets.push(notMeasured("knowledge-search-p95", searchStatement, g.searchP95Ms, "≤", " ms", reason));
    targets.push(notMeasured("knowledge-indexing", indexStatement, g.indexPerS, "≥", " chunks/s", reason));
  } else {
    const offline = isOffline(scale.embedder) ? "" : ` (stored by ${scale.embedder}, not the offline embedder)`;
    targets.push(
      scale.chunks < g.chunks
        ? notMeasured(
            "knowledge-search-p95",
            searchStatement,
            g.searchP95Ms,
            "≤",
            " ms",
            `only ${scale.chunks} chunks in this run (BENCH_KNOWLEDGE_CHUNKS)`,
          )
        : judge(
            "knowledge-search-p95",
            searchStatement,
            scale.search.p95,
            g.searchP95Ms,
            "≤",
            " ms",
            `${scale.search.n} searches of 8 words, limit 5: p50 ${ms(scale.search.p50)} ms, p99 ${ms(scale.search.p99)} ms${offline}`,
          ),
      judge(
        "knowledge-indexing",
        indexStatement,
        scale.indexPerS,
        g.indexPerS,
        "≥",
        " chunks/s",
        `${scale.chunks} chunks of ~600 characters in documents of 100, ${scale.embedder}${offline}`,
      ),
    );
  }
  const quality = run.quality.find((q) => isOffline(q.embedder));
  targets.push(
    !quality || "error" in quality
      ? notMeasured(
          "knowledge-recall",
          recallStatement,
          g.recallAt5,
          "≥",
          "",
          quality ? `the quality run failed: ${quality.error}` : "no offline quality run",
        )
      : judge(
          "knowledge-recall",
          recallStatement,
          quality.recallAt5,
          g.recallAt5,
          "≥",
          "",
          `MRR ${round(quality.mrr, 3)}; ${quality.questions} questions, ${quality.chunks} chunks, ${quality.embedder}`,
        ),
  );
  return targets;
}

const ABOUT = [
  "How well and how fast a knowledge collection answers (docs/knowledge.md).",
  "",
  "- *Running it*: with every `npm run bench`, and alone with `npm run bench -- --only knowledge` (about a minute; `BENCH_QUICK=1`: 50 timed searches instead of 200; `BENCH_KNOWLEDGE_CHUNKS` sets the speed run's size, by default 10 000). Alone, a full-size run replaces this section; a quick one only prints it.",
  "- *Quality*: every Markdown file of docs/ but this report is chunked as `conclave knowledge add` cuts it and stored through the knowledge service (its store on a real nats-server, its index); then each question of bench/knowledgeQuestions.json (each answered in one known section, checked by test/bench/knowledgeQuestions.test.ts) is searched for 10 hits. A hit answers when it is from the question's document and section. *recall@5*: the share of questions answered in the first 5 hits; *MRR*: the mean of 1/rank of the first answering hit (0 when none of the 10 answers).",
  "- *The embedders*: the **offline embedder** (no model: each content word, stemmed, hashed into 512 dimensions); an **embedding model through the `openai` client** against the suite's OpenAI-compatible server (test/helpers/openaiServer.ts), which is **not a trained model**: it embeds with a hashed bag of the text's lowercased words (FNV-1a, asked for 1536 dimensions, as text-embedding-3-small has), so its row measures the client path and a bag-of-words baseline, not a hosted model's quality; and, when the environment configures one (`CONCLAVE_EMBEDDING_MODEL` and an LLM server), that model.",
  "- *Speed*: documents of 100 synthetic paragraphs (~600 characters, one chunk each) added with `client.knowledge.add` through a runner and a knowledge worker over a real nats-server, offline embedder: chunks stored per second from the first request to the last reply; then searches of 8 words (limit 5) timed at the client, after 20 that warm up.",
  `- *Targets* (issue 39): search p95 ≤ ${KNOWLEDGE_GOALS.searchP95Ms} ms at ${KNOWLEDGE_GOALS.chunks.toLocaleString("en")} chunks; indexing ≥ ${KNOWLEDGE_GOALS.indexPerS} chunks/s with the offline embedder; recall@5 ≥ ${KNOWLEDGE_GOALS.recallAt5} with the offline embedder.`,
].join("\n");

function qualitySection(run: KnowledgeRun): string[] {
  const rows = run.quality.map((q) =>
    "error" in q
      ? [`\`${q.embedder}\``, esc(q.described), "–", "–", "–", "–", `failed: ${esc(q.error)}`]
      : [
          `\`${q.embedder}\``,
          esc(q.described),
          q.chunks,
          q.questions,
          round(q.recallAt5, 3).toFixed(3),
          round(q.mrr, 3).toFixed(3),
          q.missed.map((m) => `${m.id} (${m.rank ?? "> 10"})`).join(", ") || "–",
        ],
  );
  return [
    "### Quality on this repository's docs",
    "",
    table(["embedder", "what it is", "chunks", "questions", "recall@5", "MRR", "not in the first 5 (rank)"], rows),
  ];
}

function speedSection(run: KnowledgeRun): string[] {
  const scale = run.scale;
  if ("error" in scale) return ["### Speed", "", `Could not run: ${esc(scale.error)}`];
  return [
    `### Speed at ${scale.chunks.toLocaleString("en")} chunks`,
    "",
    table(
      ["embedder", "indexing, chunks/s", "search p50, ms", "p95, ms", "p99, ms", "max, ms", "searches"],
      [
        [
          `\`${scale.embedder}\``,
          round(scale.indexPerS, 0),
          ms(scale.search.p50),
          ms(scale.search.p95),
          ms(scale.search.p99),
          ms(scale.search.max),
          scale.search.n,
        ],
      ],
    ),
  ];
}

/** The section, between its markers; `header` (e.g. the run's line and targets table) goes after the title. */
export function renderKnowledge(run: KnowledgeRun | undefined, header?: string): string {
  const body = run
    ? [...qualitySection(run), "", ...speedSection(run)]
    : ["Not in this run: `npm run bench`, or `npm run bench -- --only knowledge`, measures it."];
  return [
    KNOWLEDGE_MARKERS[0],
    "## Knowledge retrieval (issue 39)",
    "",
    ABOUT,
    "",
    ...(header ? [header, ""] : []),
    ...body,
    KNOWLEDGE_MARKERS[1],
  ].join("\n");
}
