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
