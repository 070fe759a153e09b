/**
 * The layer order (docs/architecture.md): the tree keeps to the floors of
 * .dependency-cruiser.cjs, and an import to a higher floor is reported under
 * its floor's rule.
 */
import { randomUUID } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cruise, type ICruiseResult } from "dependency-cruiser";
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options";
import extractTSConfig from "dependency-cruiser/config-utl/extract-ts-config";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");

/** Cruises `paths` (relative to the repository) with the project's rules; the violations, as `rule: from → to`. */
async function violations(paths: string[], maxDepth: number): Promise<string[]> {
  const options = await extractDepcruiseOptions(join(root, ".dependency-cruiser.cjs"));
  const reported = await cruise(
    paths,
    { ...options, baseDir: root, validate: true, maxDepth, outputType: "json" },
    {},
    { tsConfig: extractTSConfig(join(root, "tsconfig.json")) },
  );
  const result = (typeof reported.output === "string" ? JSON.parse(reported.output) : reported.output) as ICruiseResult;
  return result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
}

describe("the layer order", () => {
  it("holds for the whole tree", async () => {
    expect(await violations(["src", "machines", "agents"], 0)).toEqual([]);
  }, 30_000);

  it("reports an import from the bus up to the runtime under the bus's floor", async () => {
    const name = `layersProbe${randomUUID().replaceAll("-", "")}.ts`;
    const file = join(root, "src/bus", name);
    await writeFile(
      file,
      'import type { applyRetention } from "../runtime/runner/retentionParts.ts";\nexport type Probe = typeof applyRetention;\n',
    );
    try {
      const found = await violations([`src/bus/${name}`], 1);
      expect(found).toContain(`floor-2-bus: src/bus/${name} → src/runtime/runner/retentionParts.ts`);
    } finally {
      await rm(file, { force: true });
    }
  }, 30_000);
});
