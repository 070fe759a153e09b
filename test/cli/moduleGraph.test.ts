/**
 * What `conclave dev` watches: an agent module and the files of its project it imports, followed
 * through static, side-effect and dynamic imports; packages and files outside the project left out.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { localModuleGraph, projectRootOf, specifiersOf } from "../../src/cli/moduleGraph.ts";

const root = mkdtempSync(join(tmpdir(), "conclave-module-graph-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Writes `files` (path → text) under `dir`. */
function write(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
}

describe("specifiersOf", () => {
  it("finds static, re-exported, side-effect, dynamic and required specifiers", () => {
    const source = [
      'import { z } from "zod";',
      "import {\n  a,\n  b,\n} from './multi.js';",
      'export { c } from "../up.js";',
      'import "./side.js";',
      "const later = await import('./lazy.js');",
      'const old = require("./old.cjs");',
      "const text = 'from nowhere';",
    ].join("\n");
    expect(specifiersOf(source).sort()).toEqual(
      ["zod", "./multi.js", "../up.js", "./side.js", "./lazy.js", "./old.cjs"].sort(),
    );
  });
});

describe("localModuleGraph", () => {
  it("follows the project's own files and stops at packages and at the project's edge", () => {
    const outside = join(root, "shared.js");
    const project = join(root, "app");
    write(root, { "shared.js": "export const shared = 1;\n" });
    write(project, {
      "package.json": '{"type":"module"}',
      "agents/echo.js": [
        'import { z } from "zod";',
        'import { reply } from "../lib/reply.js";',
        `import { shared } from ${JSON.stringify(outside)};`,
        'const words = await import("./words");',
      ].join("\n"),
      "lib/reply.js": 'export { tone } from "./tone.ts";\nexport const reply = 1;\n',
      "lib/tone.ts": 'import data from "./data.json" with { type: "json" };\nexport const tone = data;\n',
      "lib/data.json": "{}",
      "agents/words/index.js": "export const n = 2;\n",
      "lib/unused.js": "export const never = 0;\n",
      "node_modules/zod/index.js": "export const z = {};\n",
    });
    expect(projectRootOf(join(project, "agents/echo.js"))).toBe(project);
    expect(
      localModuleGraph([join(project, "agents/echo.js")])
        .map((file) => file.slice(project.length + 1))
        .sort(),
    ).toEqual(["agents/echo.js", "agents/words/index.js", "lib/data.json", "lib/reply.js", "lib/tone.ts"]);
  });
});
