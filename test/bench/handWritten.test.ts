/**
 * A full bench run writes docs/BENCHMARKS.md anew: the sections written by hand, marked
 * `<!-- by hand, after NAME -->`, are carried over after the generated section they read.
 */
import { describe, expect, it } from "vitest";
import { keepHandWritten } from "../../bench/markdown.ts";

const generated = (numbers: string) =>
  [
    "# Benchmarks",
    "",
    "<!-- durability: written by npm run bench -->",
    `## Durability\n\n${numbers}`,
    "<!-- /durability -->",
    "",
    "<!-- knowledge: written by npm run bench -->",
    "## Knowledge",
    "<!-- /knowledge -->",
    "",
  ].join("\n");

const reading =
  "<!-- by hand, after durability -->\n## Reading the durability run\n\nWhy it missed.\n<!-- /by hand -->\n";
const second = "<!-- by hand, after durability -->\n## A second reading\n<!-- /by hand -->\n";

describe("keepHandWritten", () => {
  it("puts each hand-written section back after the section it reads, in its order", () => {
    const previous = generated("old numbers").replace(
      "<!-- /durability -->\n",
      `<!-- /durability -->\n\n${reading}\n${second}`,
    );
    const kept = keepHandWritten(previous, generated("new numbers"));
    expect(kept).toContain("new numbers");
    expect(kept).not.toContain("old numbers");
    const at = (text: string) => kept.indexOf(text);
    expect(at("<!-- /durability -->")).toBeLessThan(at("## Reading the durability run"));
    expect(at("## Reading the durability run")).toBeLessThan(at("## A second reading"));
    expect(at("## A second reading")).toBeLessThan(at("<!-- knowledge:"));
    // Carried over once, and a second carry changes nothing.
    expect(kept.split("Why it missed.").length).toBe(2);
    expect(keepHandWritten(kept, kept)).toBe(kept);
  });

  it("appends a section whose generated section is gone, and leaves a report without any alone", () => {
    const previous = generated("old").replace(
      "<!-- /knowledge -->\n",
      `<!-- /knowledge -->\n${reading.replace("durability", "tracing")}`,
    );
    const kept = keepHandWritten(previous, generated("new"));
    expect(kept.trimEnd().endsWith("<!-- /by hand -->")).toBe(true);
    expect(keepHandWritten(generated("old"), generated("new"))).toBe(generated("new"));
  });
});
