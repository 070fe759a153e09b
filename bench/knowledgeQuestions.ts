/**
 * The knowledge bench's question set (bench/knowledgeQuestions.json): questions about this
 * repository's docs/, each answered in one known section, and how a search's hits are scored
 * against it (recall@5, MRR). Pure: reading the files is the caller's, so the unit test and the
 * bench judge sections the same way, by the chunker's own headings.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chunkText } from "../src/knowledge/chunk.ts";
import { REPO_ROOT } from "../src/nats/server.ts";

/** One question and where its answer lives. */
export interface KnowledgeQuestion {
  id: string;
  question: string;
  /** The file in docs/ that answers it, e.g. `context.md`. */
  doc: string;
  /** The heading of the answering section (its own, not the path above it). */
  heading: string;
  /** Key words of the answer, each found in that section (case-insensitive). */
  answer: string[];
}

/** A search hit as far as scoring needs it. */
export interface ScoredHit {
  document: string;
  heading?: string;
}

export const QUESTIONS_FILE = join(REPO_ROOT, "bench", "knowledgeQuestions.json");
export const DOCS_DIR = join(REPO_ROOT, "docs");
/** Written by the bench itself (its numbers change with every run): not part of the corpus. */
const GENERATED = new Set(["BENCHMARKS.md"]);

/** Recall is counted in this many hits; MRR in {@link MRR_DEPTH}. */
export const RECALL_AT = 5;
/** How many hits a question's search asks for: its reciprocal rank is 0 past them. */
export const MRR_DEPTH = 10;

/** The question set, each entry checked for its fields; a bad one throws naming it. */
export function loadQuestions(path = QUESTIONS_FILE): KnowledgeQuestion[] {
  const parsed = JSON.parse(readFileSync(path, "utf8")) as { questions?: unknown };
  if (!Array.isArray(parsed.questions)) throw new Error(`${path}: no "questions" array`);
  return parsed.questions.map((entry, at) => {
    const q = entry as Partial<KnowledgeQuestion>;
    const strings = [q.id, q.question, q.doc, q.heading].every((v) => typeof v === "string" && v !== "");
    if (!strings || !Array.isArray(q.answer) || q.answer.length === 0)
      throw new Error(`${path}: question ${at} needs id, question, doc, heading and answer words`);
    return q as KnowledgeQuestion;
  });
}

/** The corpus: every Markdown file of docs/ but the generated report, by name (`context.md`). */
export function docsCorpus(dir = DOCS_DIR): { document: string; text: string }[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith(".md") && !GENERATED.has(name))
    .sort()
    .map((document) => ({ document, text: readFileSync(join(dir, document), "utf8") }));
}

/** A chunk's own section: the last heading of its path. */
export const sectionName = (heading: string | undefined): string | undefined => heading?.split(" > ").at(-1);

/**
 * Every section of a Markdown text under its own heading, as the chunker cuts it: the text of its
 * chunks, and how many distinct heading paths end with that heading (more than one: ambiguous).
 */
export function sectionsOf(text: string): Map<string, { text: string; paths: Set<string> }> {
  const sections = new Map<string, { text: string; paths: Set<string> }>();
  for (const chunk of chunkText(text, { format: "markdown" })) {
    const name = sectionName(chunk.heading);
    if (name === undefined) continue;
    const section = sections.get(name) ?? { text: "", paths: new Set<string>() };
    section.text += `${chunk.text}\n\n`;
    section.paths.add(chunk.heading as string);
    sections.set(name, section);
  }
  return sections;
}

/** Whether a hit is from the question's answering section. */
export const answers = (question: KnowledgeQuestion, hit: ScoredHit): boolean =>
  hit.document === question.doc && sectionName(hit.heading) === question.heading;

/** The rank (from 1) of the first answering hit, or null when none of `hits` answers. */
export function rankOf(question: KnowledgeQuestion, hits: readonly ScoredHit[]): number | null {
  const at = hits.findIndex((hit) => answers(question, hit));
  return at < 0 ? null : at + 1;
}

/** Recall@5 (share of questions answered in the first 5 hits) and MRR (mean of 1/rank, 0 when not found). */
export function quality(ranks: readonly (number | null)[]): { recallAt5: number; mrr: number } {
  if (ranks.length === 0) return { recallAt5: Number.NaN, mrr: Number.NaN };
  const found = ranks.filter((rank) => rank !== null && rank <= RECALL_AT).length;
  const reciprocal = ranks.reduce<number>((sum, rank) => sum + (rank === null ? 0 : 1 / rank), 0);
  return { recallAt5: found / ranks.length, mrr: reciprocal / ranks.length };
}
