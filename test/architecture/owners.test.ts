/**
 * One owner for each small concept (issue 35): an error's message, a sleep,
 * a retry's backoff, a turn's key, the timer limit and the package version
 * are each written in one file, and everywhere else calls it. This reads
 * src/, machines/ and agents/ as text and names, rule by rule, each line
 * that writes one again.
 */
import { readFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");
/** This checkout's version, as a string literal would write it. */
const version = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version;

interface OwnerRule {
  /** What the rule keeps in one place, as the failure names it. */
  name: string;
  /** The one file (relative to the repository) that may write it. */
  owner: string;
  /** A line that writes it. */
  pattern: RegExp;
  /** A line of the code the rule replaced: the pattern must catch it. */
  example: string;
}

const rules: OwnerRule[] = [
  {
    name: "error message: use messageOf()",
    owner: "src/errors.ts",
    pattern: /instanceof Error \?\s*[\w.]+\.message\s*:\s*String\(/,
    example: "const message = error instanceof Error ? error.message : String(error);",
  },
  {
    name: "inline sleep: use pause()",
    owner: "src/deadline.ts",
    pattern: /new Promise\b.*setTimeout\(\s*(resolve|r)\s*,/,
    example: "await new Promise((resolve) => setTimeout(resolve, 50));",
  },
  {
    name: "backoff formula: use backoffMs()",
    owner: "src/deadline.ts",
    pattern: /\* 2 \*\* /,
    example: "await pause(Math.min(100 * 2 ** attempt, 2_000));",
  },
  {
    name: "hand-written turn key: use turnKey() or turnLabel()",
    owner: "src/contracts/turnKey.ts",
    pattern: /\$\{[\w.]*session\w*\}\.\$\{[\w.]*turn/i,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text the rule reads
    example: "await this.kv.delete(`${sessionId}.${turnId}`);",
  },
  {
    name: "timer limit: import MAX_TIMER_MS",
    owner: "src/deadline.ts",
    pattern: /\bMAX_TIMER_MS\s*=/,
    example: "const MAX_TIMER_MS = 2 ** 31 - 1;",
  },
  {
    name: "package version: use packageVersion()",
    owner: "src/version.ts",
    pattern: new RegExp(`["'\`]${version.replaceAll(".", "\\.")}["'\`]`),
    example: `version: "${version}",`,
  },
];

/** Every .ts file below `dir` (relative to the repository). */
async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(join(root, dir), { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

/** Each line outside a rule's owner that its pattern matches, as `rule: file:line`. */
async function repeats(): Promise<string[]> {
  const files = (await Promise.all(["src", "machines", "agents"].map(sources))).flat().sort();
  const found: string[] = [];
  for (const file of files) {
    const lines = (await readFile(join(root, file), "utf8")).split("\n");
    for (const rule of rules) {
      if (file === rule.owner) continue;
      lines.forEach((line, index) => {
        if (rule.pattern.test(line)) found.push(`${rule.name}: ${file}:${index + 1}`);
      });
    }
  }
  return found;
}

describe("one owner for each small concept", () => {
  it.each(rules)("$name: the rule catches the code it replaced", (rule) => {
    expect(rule.pattern.test(rule.example)).toBe(true);
  });

  it("no file but its owner writes one again", async () => {
    expect(await repeats()).toEqual([]);
  });
});
