/**
 * The README's layout table agrees with the tree: every folder under src/ is
 * named in it (by its path, or by its name in its parent's row), and every
 * path it names exists.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const readme = readFileSync("README.md", "utf8");
const table = readme.slice(
  readme.indexOf("## How it is built"),
  readme.indexOf("## ", readme.indexOf("## How it is built") + 3),
);

const foldersUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => [join(dir, entry.name), ...foldersUnder(join(dir, entry.name))]);

describe("the README's layout table", () => {
  it("names every folder under src/", () => {
    const missing = foldersUnder("src").filter((folder) => {
      const name = folder.split("/").at(-1);
      return !table.includes(`\`${folder}/\``) && !table.includes(`\`${name}/\``);
    });
    expect(missing).toEqual([]);
  });

  it("names only paths that exist", () => {
    const named = [
      ...table.matchAll(/`((?:src|machines|agents|recipes|deploy|bench|bin|scripts)(?:\/[\w.-]+)*\/?)`/g),
    ].map((match) => match[1]!);
    expect(named.length).toBeGreaterThan(20);
    expect(named.filter((path) => !existsSync(path))).toEqual([]);
  });
});
