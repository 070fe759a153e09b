/** YAML a recipe file must not be able to use against the loader. */
import { describe, expect, it } from "vitest";
import { parseRecipeText, RecipeValidationError } from "../../src/recipes/load.ts";

describe("recipe text", () => {
  it("refuses an alias bomb as a document issue, not a crash", () => {
    const lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let level = 1; level < 8; level++) {
      const previous = String.fromCharCode(96 + level);
      const name = String.fromCharCode(97 + level);
      lines.push(`${name}: &${name} [${Array(10).fill(`*${previous}`).join(", ")}]`);
    }
    const bomb = lines.join("\n");
    let thrown: unknown;
    try {
      parseRecipeText(bomb, "bomb.yaml");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(RecipeValidationError);
    expect((thrown as RecipeValidationError).issues[0]).toMatchObject({ path: "(document)" });
    expect((thrown as Error).message).toMatch(/^bomb\.yaml: \(document\): .*alias/i);
  });
});

describe("blackboard writes", () => {
  it("refuse an index past the end of a list (a sparse array JSON would expand without bound)", async () => {
    const { writePath } = await import("../../src/recipes/paths.ts");
    expect(writePath({ list: [1] }, "list.1", 2)).toEqual({ list: [1, 2] });
    expect(() => writePath({ list: [1] }, "list.100000000", 2)).toThrow(/past the end of a list of 1/);
  });
});
