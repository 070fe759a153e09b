/**
 * How a value's problems are written for people: `path: message`, one per
 * problem. Every message that reports zod issues (error replies, definition
 * errors, recipe and memory-graph validation) is written here, so they all
 * read alike.
 */

/** One problem of a value: where (zod's path segments, or a path already written out) and what. */
export interface IssueLike {
  readonly path: readonly PropertyKey[] | string;
  readonly message: string;
}

/** A zod error, or anything else that carries issues. */
export type IssueSource = { readonly issues: readonly IssueLike[] } | readonly IssueLike[];

/** How {@link describeIssues} writes issues. */
export interface IssueFormat {
  /** Written before every path: `recipe.inputs` gives `recipe.inputs.name: …` (default none). */
  at?: string;
  /** Names an issue of the value itself (an empty path); `""` writes its message alone. Default `(root)`. */
  root?: string;
  /** Array indices as `nodes[2].id`, the style of recipe and memory-graph paths, rather than `nodes.2.id`. */
  bracketIndices?: boolean;
  /** At most this many issues (default all), then `and N more`: `1` shows the first only. */
  limit?: number;
}

/** The path of an issue as text, formatted as {@link describeIssues} writes it. */
export function issuePath(path: IssueLike["path"], format: IssueFormat = {}): string {
  let text = format.at ?? "";
  if (typeof path === "string") text = text && path ? `${text}.${path}` : text || path;
  else
    for (const segment of path) {
      // String(), not join(): a symbol key would make join throw.
      if (typeof segment === "number" && format.bracketIndices) text += `[${segment}]`;
      else text = text ? `${text}.${String(segment)}` : String(segment);
    }
  return text || (format.root ?? "(root)");
}

/**
 * The issues as `path: message` lines (see {@link IssueFormat}), or, given
 * `join`, as one line: `describeIssues(error, { join: "; " })`.
 */
export function describeIssues(issues: IssueSource, format: IssueFormat & { join: string }): string;
export function describeIssues(issues: IssueSource, format?: IssueFormat): string[];
export function describeIssues(issues: IssueSource, format: IssueFormat & { join?: string } = {}): string[] | string {
  const all = "issues" in issues ? issues.issues : issues;
  const shown = format.limit === undefined ? all : all.slice(0, format.limit);
  const lines = shown.map((issue) => {
    const path = issuePath(issue.path, format);
    return path ? `${path}: ${issue.message}` : issue.message;
  });
  if (all.length > shown.length) lines.push(`and ${all.length - shown.length} more`);
  return format.join === undefined ? lines : lines.join(format.join);
}
