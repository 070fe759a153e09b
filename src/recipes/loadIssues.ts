import type { z } from "zod";
import { AgentId } from "../contracts/ids.ts";
import { issuePath } from "../contracts/issues.ts";
import { type Expr, parseExpression } from "./expression.ts";
import type { RecipeIssue } from "./text.ts";

/** A schema's issues as recipe issues, each naming its path in the document as recipes write it: `a.b[2].c`. */
export const zodIssues = (error: z.ZodError): RecipeIssue[] =>
  error.issues.map((issue) => ({
    path: issuePath(issue.path, { bracketIndices: true, root: "(document)" }),
    message: issue.message,
  }));

/**
 * The issues found while loading one document. Loading goes on past an
 * issue so that every one is reported at once; the checks of single fields
 * that both document shapes make (conditions, agent ids) record theirs here.
 */
export class LoadIssues {
  readonly issues: RecipeIssue[] = [];

  /** Records an issue at `path` in the document. */
  issue(path: string, message: string): void {
    this.issues.push({ path, message });
  }

  /** The parsed condition, or undefined (and an issue at `path`) when it does not parse. */
  condition(path: string, source: string): Expr | undefined {
    try {
      return parseExpression(source);
    } catch (error) {
      this.issue(path, (error as Error).message);
      return undefined;
    }
  }

  /** `id`, with an issue at `path` when it is not an agent id. */
  agentId(path: string, id: string): string {
    if (!AgentId.safeParse(id).success)
      this.issue(path, `'${id}' is not an agent id (1-3 lowercase tokens joined by dots, e.g. acme.writer)`);
    return id;
  }
}
