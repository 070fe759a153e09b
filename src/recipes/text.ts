import { parseDocument } from "yaml";
import { describeIssues } from "../contracts/issues.ts";
import { ConclaveError } from "../errors.ts";

/** One problem of a document: where (`topology.nodes[2].agent_ref`) and what. */
export interface RecipeIssue {
  path: string;
  message: string;
}

/** A recipe document that cannot be loaded (or run): every issue found, each naming its path. */
export class RecipeValidationError extends ConclaveError<"invalid_recipe"> {
  readonly issues: RecipeIssue[];
  constructor(issues: RecipeIssue[], source?: string) {
    super("invalid_recipe", `${source ? `${source}: ` : ""}${describeIssues(issues, { limit: 10, join: "; " })}`);
    this.issues = issues;
  }
}

/** Largest recipe document, in characters of text. */
export const MAX_RECIPE_TEXT = 256 * 1024;
/** A document's text (YAML, or JSON, which is YAML) as a value; syntax errors name the line and column. */
export function parseRecipeText(text: string, source = "recipe"): unknown {
  if (text.length > MAX_RECIPE_TEXT)
    throw new RecipeValidationError(
      [{ path: "(document)", message: `longer than ${MAX_RECIPE_TEXT} characters` }],
      source,
    );
  // prettyErrors is what gives an error its line and column.
  const document = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    throw new RecipeValidationError(
      document.errors.map((error) => ({
        path: error.linePos?.[0] ? `line ${error.linePos[0].line}, column ${error.linePos[0].col}` : "(document)",
        message: error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, ""),
      })),
      source,
    );
  }
  try {
    return document.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // An alias bomb (or another document the YAML library will not expand) is a document issue, not a crash.
    throw new RecipeValidationError([{ path: "(document)", message: (error as Error).message }], source);
  }
}
