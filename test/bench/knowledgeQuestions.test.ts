/**
 * The knowledge bench's question set (bench/knowledgeQuestions.json) still matches docs/: each
 * question's section exists, is named by one heading path only, and holds the answer's key words.
 * A docs change that moves or rewords an answer fails here, not silently in the bench's recall.
 */
import { describe, expect, it } from "vitest";
import {
  answers,
  docsCorpus,
  type KnowledgeQuestion,
  loadQuestions,
  quality,
  rankOf,
  sectionsOf,
} from "../../bench/knowledgeQuestions.ts";

const questions = loadQuestions();
const corpus = new Map(docsCorpus().map(({ document, text }) => [document, sectionsOf(text)]));

describe("the knowledge question set", () => {
  it("has 40 questions or more, each id once", () => {
    expect(questions.length).toBeGreaterThanOrEqual(40);
    expect(new Set(questions.map((q) => q.id)).size).toBe(questions.length);
  });

  it.each(questions.map((q) => [q.id, q] as const))("%s: its section exists and holds the answer", (_id, q) => {
    const sections = corpus.get(q.doc);
    expect(sections, `docs/${q.doc} is not in the corpus`).toBeDefined();
    const section = sections?.get(q.heading);
    expect(section, `docs/${q.doc} has no section "${q.heading}"`).toBeDefined();
    expect([...(section?.paths ?? [])], `"${q.heading}" names more than one section of docs/${q.doc}`).toHaveLength(1);
    const text = section?.text.toLowerCase() ?? "";
    const missing = q.answer.filter((word) => !text.includes(word.toLowerCase()));
    expect(missing, `docs/${q.doc} "${q.heading}" lacks these answer words`).toEqual([]);
  });
});

describe("scoring hits against a question", () => {
  const q: KnowledgeQuestion = { id: "x", question: "?", doc: "a.md", heading: "Two", answer: ["w"] };

  it("a hit answers when its document and its own section match, whatever the path above", () => {
    expect(answers(q, { document: "a.md", heading: "Guide > Two" })).toBe(true);
    expect(answers(q, { document: "a.md", heading: "Two > Three" })).toBe(false);
    expect(answers(q, { document: "b.md", heading: "Two" })).toBe(false);
    expect(answers(q, { document: "a.md" })).toBe(false);
  });

  it("ranks from 1, null when no hit answers", () => {
    expect(rankOf(q, [{ document: "b.md" }, { document: "a.md", heading: "Two" }])).toBe(2);
    expect(rankOf(q, [{ document: "b.md" }])).toBeNull();
  });

  it("recall@5 counts ranks up to 5; MRR averages 1/rank with 0 for not found", () => {
    expect(quality([1, 2, 6, null])).toEqual({ recallAt5: 0.5, mrr: (1 + 0.5 + 1 / 6) / 4 });
    expect(quality([]).recallAt5).toBeNaN();
  });
});
