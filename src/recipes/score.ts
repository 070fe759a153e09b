/**
 * Reading a judge's verdict: a normalized score in [0, 1] and its critique.
 * A judge may answer with an object (`{score, critique}`, or `feedback`,
 * `reason`, `rationale`), or with text (`Score: 7/10 ...`, `0.8`, `85%`).
 * Scores on a 0–10 or 0–100 scale are brought to 0–1.
 */
export interface Verdict {
  score: number;
  critique: string;
}

const normalize = (raw: number, scale?: number): number | null => {
  if (!Number.isFinite(raw) || raw < 0) return null;
  if (scale) return raw <= scale ? raw / scale : null;
  if (raw <= 1) return raw;
  if (raw <= 10) return raw / 10;
  if (raw <= 100) return raw / 100;
  return null;
};

const CRITIQUE_KEYS = ["critique", "feedback", "reason", "rationale", "comment", "explanation"] as const;

function fromText(text: string): number | null {
  const fraction = /(-?\d+(?:\.\d+)?)\s*\/\s*(\d+(?:\.\d+)?)/.exec(text);
  if (fraction) return normalize(Number(fraction[1]), Number(fraction[2]));
  const percent = /(-?\d+(?:\.\d+)?)\s*%/.exec(text);
  if (percent) return normalize(Number(percent[1]), 100);
  const labelled = /score\D{0,12}?(-?\d+(?:\.\d+)?)/i.exec(text) ?? /(-?\d+(?:\.\d+)?)/.exec(text);
  return labelled ? normalize(Number(labelled[1])) : null;
}

/** The judge's verdict, or null when no score can be read from its answer. */
export function verdictOf(answer: unknown): Verdict | null {
  if (typeof answer === "number") {
    const score = normalize(answer);
    return score === null ? null : { score, critique: "" };
  }
  if (typeof answer === "string") {
    const score = fromText(answer);
    return score === null ? null : { score, critique: answer.trim() };
  }
  if (typeof answer !== "object" || answer === null) return null;
  const record = answer as Record<string, unknown>;
  const raw = record.score ?? record.rating ?? record.grade;
  const score = typeof raw === "number" ? normalize(raw) : typeof raw === "string" ? fromText(raw) : null;
  if (score === null) return null;
  const critique = CRITIQUE_KEYS.map((key) => record[key]).find((value) => typeof value === "string");
  return { score, critique: (critique as string | undefined) ?? "" };
}
