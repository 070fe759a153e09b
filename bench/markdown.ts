import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { ProfileSummary } from "./profile.ts";
import { round } from "./stats.ts";
import type { Target } from "./targets.ts";

/** Markdown tables and cells of the bench's report (docs/BENCHMARKS.md). */
export const table = (headers: string[], rows: (string | number)[][]): string =>
  [
    `| ${headers.join(" | ")} |`,
    `| ${headers.map((_, i) => (i === 0 ? "---" : "--:")).join(" | ")} |`,
    ...rows.map((row) => `| ${row.map((cell) => String(cell)).join(" | ")} |`),
  ].join("\n");

export const ms = (value: number | undefined) =>
  value === undefined || Number.isNaN(value) ? "–" : round(value, 2).toFixed(2);
export const x = (value: number) => (Number.isFinite(value) ? `${round(value, 2)}x` : "–");
export const pct = (share: number) => `${round(share * 100, 1)}%`;
/** Markdown-safe: a `$` or `|` in a subject must not start maths or split a cell. */
export const esc = (text: string) => text.replace(/\$/g, "\\$").replace(/\|/g, "\\|");

export function profileTable(
  summary: ProfileSummary,
  entries: "topSelf" | "byOrigin" | "topInclusive",
  limit: number,
): string {
  return table(
    ["", "ms", "share of busy"],
    summary[entries].slice(0, limit).map((e) => [`\`${e.name.replace(/\|/g, "\\|")}\``, ms(e.ms), pct(e.share)]),
  );
}

/** A target's value in its unit: `1.7x`, `840 ms`, `0.013 cores`, `0 turns`; `–` when unknown (NaN, or null read back from JSON). */
const inUnit = (value: number | null, unit = "x") =>
  value === null || !Number.isFinite(value) ? "–" : unit === "x" ? x(value) : `${round(value, 3)}${unit}`;

/** Where a target is missed, by how much: a factor, or the excess over a goal of 0. */
const missedBy = (t: Target) => (t.goal === 0 ? inUnit(t.shortfall, t.unit) : `${t.shortfall}x`);

/** The targets table: value, goal, value ÷ goal, met or by how much missed, or not measured and why. */
export function targetsTable(targets: Target[]): string {
  return table(
    ["target", "measured", "goal", "measured ÷ goal", "verdict"],
    targets.map((t) => [
      t.detail ? `${t.statement} (${esc(t.detail)})` : t.statement,
      inUnit(t.measured, t.unit),
      inUnit(t.goal, t.unit) === "–" ? "–" : `${t.direction} ${inUnit(t.goal, t.unit)}`,
      t.notMeasured !== undefined || t.goal === 0 ? "–" : x(t.measured / t.goal),
      t.notMeasured !== undefined
        ? `**not measured**: ${esc(t.notMeasured)}`
        : t.met
          ? "**met**"
          : `**missed** by ${missedBy(t)}`,
    ]),
  );
}

/**
 * Puts `section` (which begins with `start` and ends with `end`, two HTML comments) into the report
 * at `path`: in place of its earlier copy, else at the end. How a phase run on its own
 * (`--cluster`, `--only under-load`) replaces only its own section of docs/BENCHMARKS.md.
 */
export function spliceSection(path: string, section: string, start: string, end: string): void {
  const report = existsSync(path) ? readFileSync(path, "utf8") : "# Benchmarks\n";
  const from = report.indexOf(start);
  const to = report.indexOf(end);
  const next =
    from >= 0 && to > from
      ? `${report.slice(0, from)}${section}${report.slice(to + end.length)}`
      : `${report.trimEnd()}\n\n${section}\n`;
  writeFileSync(path, next);
}

/**
 * Sections of the report written by hand: `<!-- by hand, after NAME -->` … `<!-- /by hand -->`, each
 * reading the generated section whose end marker is `<!-- /NAME -->`. A full run writes the report
 * anew, so it carries them over from the report it replaces (see {@link keepHandWritten}).
 */
const HAND_WRITTEN = /<!-- by hand, after ([\w-]+) -->\n[\s\S]*?<!-- \/by hand -->\n?/g;

/**
 * `next` with the hand-written sections of `previous` put back: each right after the end marker of the
 * section it follows, or at the end when `next` has no such section.
 */
export function keepHandWritten(previous: string, next: string): string {
  let report = next;
  // Last first: sections after the same end marker then keep their order.
  for (const match of [...previous.matchAll(HAND_WRITTEN)].reverse()) {
    const [block, after] = match;
    const text = block.endsWith("\n") ? block : `${block}\n`;
    if (report.includes(text)) continue;
    const end = `<!-- /${after} -->\n`;
    const at = report.indexOf(end);
    report =
      at >= 0
        ? `${report.slice(0, at + end.length)}\n${text}${report.slice(at + end.length)}`
        : `${report.trimEnd()}\n\n${text}`;
  }
  return report;
}
