import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { REPO } from "./packedProject.ts";

/** Issue 35: the root entry (`conclave`, `src/index.ts`) is the core; everything else has a sub-entry. */
const ROOT_ENTRY_BUDGET = 60;

/** The names `src/index.ts` exports, values and types alike, as the type checker sees them. */
function rootEntryNames(): string[] {
  const entry = join(REPO, "src", "index.ts");
  const program = ts.createProgram([entry], {
    allowImportingTsExtensions: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
    skipLibCheck: true,
    strict: true,
    target: ts.ScriptTarget.ES2022,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  const module = source && checker.getSymbolAtLocation(source);
  if (!module) throw new Error(`cannot read the module symbol of ${entry}`);
  return checker
    .getExportsOfModule(module)
    .map((symbol) => symbol.getName())
    .sort();
}

describe("the root entry", () => {
  it(`exports at most ${ROOT_ENTRY_BUDGET} names, the core`, () => {
    const names = rootEntryNames();
    expect(names).toEqual(
      expect.arrayContaining(["connect", "defineAgent", "defineTool", "startRunner", "startWorker"]),
    );
    expect(names.length, names.join(", ")).toBeLessThanOrEqual(ROOT_ENTRY_BUDGET);
  }, 60_000);
});
