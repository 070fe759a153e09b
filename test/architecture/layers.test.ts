/**
 * The layer order (docs/architecture.md): the tree keeps to the floors of
 * .dependency-cruiser.cjs, and an import to a higher floor is reported under
 * its floor's rule.
 */
import { readdirSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { cruise, type ICruiseResult } from "dependency-cruiser";
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options";
import extractTSConfig from "dependency-cruiser/config-utl/extract-ts-config";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");

/** Cruises `paths` (relative to `base`, the repository by default) with the project's rules; the violations, as `rule: from → to`. */
async function violations(paths: string[], maxDepth: number, base = root): Promise<string[]> {
  const options = await extractDepcruiseOptions(join(root, ".dependency-cruiser.cjs"));
  const reported = await cruise(
    paths,
    { ...options, baseDir: base, validate: true, maxDepth, outputType: "json" },
    {},
    { tsConfig: extractTSConfig(join(root, "tsconfig.json")) },
  );
  const result = (typeof reported.output === "string" ? JSON.parse(reported.output) : reported.output) as ICruiseResult;
  return result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
}

/** Every floor's path patterns: floor 0's own, and those it may not import (all the floors above). */
function floorPatterns(): RegExp[] {
  const config = createRequire(import.meta.url)(join(root, ".dependency-cruiser.cjs")) as {
    forbidden: { name: string; from: { path: string[] }; to: { path: string[] } }[];
  };
  const base = config.forbidden.find((rule) => rule.name.startsWith("floor-0-"));
  if (!base) throw new Error(".dependency-cruiser.cjs has no floor-0 rule");
  return [...base.from.path, ...base.to.path].map((pattern) => new RegExp(pattern));
}

describe("the layer order", () => {
  it("places every top-level folder and file of src/ on a floor (an unplaced one would go unchecked)", () => {
    const patterns = floorPatterns();
    const entries = readdirSync(join(root, "src"), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() || entry.name.endsWith(".ts"))
      .map((entry) => (entry.isDirectory() ? `src/${entry.name}/any.ts` : `src/${entry.name}`));
    const unplaced = [...entries, "machines/any.ts", "agents/any.ts"].filter(
      (path) => !patterns.some((pattern) => pattern.test(path)),
    );
    expect(unplaced, "add them to a floor in .dependency-cruiser.cjs and docs/architecture.md").toEqual([]);
  });

  it("holds for the whole tree", async () => {
    expect(await violations(["src", "machines", "agents"], 0)).toEqual([]);
  }, 30_000);

  it("reports an import from the bus up to the runtime under the bus's floor", async () => {
    // A tree of two files laid out like ours, in a temporary directory: the checkout is never
    // written to, so tests that read src/ at the same moment see it as it is.
    const tree = await mkdtemp(join(tmpdir(), "conclave-layers-"));
    const write = async (path: string, text: string) => {
      await mkdir(dirname(join(tree, path)), { recursive: true });
      await writeFile(join(tree, path), text);
    };
    try {
      await write("src/runtime/runner/retentionParts.ts", "export const applyRetention = (): void => {};\n");
      await write(
        "src/bus/probe.ts",
        'import { applyRetention } from "../runtime/runner/retentionParts.ts";\nexport const probe = applyRetention;\n',
      );
      expect(await violations(["src/bus/probe.ts"], 1, tree)).toEqual([
        "floor-2-bus: src/bus/probe.ts → src/runtime/runner/retentionParts.ts",
      ]);
      // The same file importing down (the bus's own floor and below) is no violation.
      await write(
        "src/bus/probe.ts",
        'import { applyRetention } from "./retention.ts";\nexport const probe = applyRetention;\n',
      );
      await write("src/bus/retention.ts", "export const applyRetention = (): void => {};\n");
      expect(await violations(["src/bus/probe.ts"], 1, tree)).toEqual([]);
    } finally {
      await rm(tree, { recursive: true, force: true });
    }
  }, 30_000);
});
