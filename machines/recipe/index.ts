export { recipeActors } from "./actors.ts";
export { compileRecipe, type RecipeMachine } from "./compile.ts";
export type { RecipeContext } from "./context.ts";
export { type RecipeEvent, recipeSetup } from "./setup.ts";
