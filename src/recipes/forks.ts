import { describeIssues } from "../contracts/issues.ts";
import type { Recipe, RecipeNode } from "./recipe.ts";

/**
 * A fork: a node with several unconditioned edges. Its branches are chains
 * of nodes that meet at one join node (or all end): in `parallel` mode they
 * run at once, in `sequential` mode one after another, and the run goes on
 * at the join once every branch is done.
 */
export interface Fork {
  head: string;
  /** Each branch's nodes, in order (a branch may be empty: the head leads straight to the join). */
  branches: string[][];
  /** Where the branches meet; null when they all end the run. */
  join: string | null;
}

/** The shape of a recipe's graph the compiler needs: forks, and which fork each branch node belongs to. */
export interface GraphShape {
  forks: Map<string, Fork>;
  /** Branch node id → the head of its fork. */
  forkOf: Map<string, string>;
}

/** A graph the compiler cannot turn into a statechart, with the node and the reason. */
export class RecipeShapeError extends Error {
  constructor(readonly issues: { path: string; message: string }[]) {
    super(describeIssues(issues, { join: "; " }));
    this.name = "RecipeShapeError";
  }
}

/** Where each node may lead: its decisions' routes, its edges. */
export function targetsOf(node: RecipeNode): string[] {
  switch (node.kind) {
    case "router":
      return [...Object.values(node.routes), ...(node.default_route ? [node.default_route] : [])];
    case "evaluator":
      return [node.pass_route, node.fail_route];
    case "human":
      return [...node.next.map((t) => t.target), ...(node.timeout_route ? [node.timeout_route] : [])];
    default:
      return node.next.map((t) => t.target);
  }
}

/** The unconditioned edges of a node that may fork (decision nodes route, they never fork). */
const forkTargets = (node: RecipeNode): string[] =>
  node.kind === "router" || node.kind === "evaluator" || node.kind === "switch"
    ? []
    : node.next.filter((t) => !t.when).map((t) => t.target);

/** Finds the recipe's forks and checks that each is one the compiler supports. */
export function graphShape(recipe: Recipe): GraphShape {
  const byId = new Map(recipe.nodes.map((node) => [node.id, node]));
  const inDegree = new Map<string, number>();
  for (const node of recipe.nodes)
    for (const target of new Set(targetsOf(node))) inDegree.set(target, (inDegree.get(target) ?? 0) + 1);
  const forks = new Map<string, Fork>();
  const forkOf = new Map<string, string>();
  const issues: { path: string; message: string }[] = [];
  for (const head of recipe.nodes) {
    const targets = forkTargets(head);
    if (targets.length < 2) continue;
    const branches: string[][] = [];
    const ends = new Set<string | null>();
    for (const first of targets) {
      const chain: string[] = [];
      let current: string | null = first;
      while (current !== null && (inDegree.get(current) ?? 0) < 2) {
        const node = byId.get(current);
        if (!node) break;
        if (node.kind !== "agent" && node.kind !== "logic" && node.kind !== "council") {
          issues.push({
            path: node.at,
            message: `'${node.id}' is a ${node.kind} node inside the branches of the fork at '${head.id}': branches hold agent, logic and council nodes only`,
          });
          break;
        }
        if (node.next.length > 1 || node.next.some((t) => t.when)) {
          issues.push({
            path: node.at,
            message: `'${node.id}' is in a branch of the fork at '${head.id}' and must lead on to one node, unconditionally`,
          });
          break;
        }
        chain.push(current);
        current = node.next[0]?.target ?? null;
      }
      branches.push(chain);
      ends.add(current);
    }
    if (ends.size > 1) {
      issues.push({
        path: head.at,
        message: `the branches of the fork at '${head.id}' must meet at one node (they reach ${[...ends].map((end) => end ?? "the end").join(", ")})`,
      });
      continue;
    }
    const join = [...ends][0] ?? null;
    for (const chain of branches)
      for (const id of chain) {
        if (forks.has(id) || forkOf.has(id))
          issues.push({ path: byId.get(id)!.at, message: `'${id}' is in two forks: nested forks are not supported` });
        forkOf.set(id, head.id);
      }
    forks.set(head.id, { head: head.id, branches, join });
  }
  for (const [id] of forks) {
    if (forkOf.has(id))
      issues.push({
        path: byId.get(id)!.at,
        message: `'${id}' forks inside another fork: nested forks are not supported`,
      });
  }
  if (recipe.entry && forkOf.has(recipe.entry))
    issues.push({ path: "entry", message: `the entry node '${recipe.entry}' cannot be inside a fork's branch` });
  if (issues.length > 0) throw new RecipeShapeError(issues);
  return { forks, forkOf };
}
