import type { GraphEdge, GraphState, MachineGraph } from "./machineGraph.ts";

/**
 * Where a diagram writes each edge. Mermaid puts a state in the last composite
 * block that mentions it (mermaid-js/mermaid#5290), so an edge is written
 * inside a composite state only when both its ends are that state's direct
 * children; any other edge is written at the top level, outside every block
 * (`null`), where a mention moves nothing. DOT follows the same rule.
 */
export function edgesByContainer(graph: MachineGraph): Map<string | null, GraphEdge[]> {
  const parents = new Map<string, string | null>();
  const visit = (state: GraphState, parent: string | null) => {
    parents.set(state.id, parent);
    for (const child of state.children) visit(child, state.id);
  };
  visit(graph.root, null);
  const grouped = new Map<string | null, GraphEdge[]>();
  for (const edge of graph.edges) {
    const parent = parents.get(edge.source) ?? null;
    const container = parent !== null && parent === parents.get(edge.target) ? parent : null;
    // Without a box around the root, its block is the top level.
    const key = container === graph.root.id && !drawsRootBox(graph) ? null : container;
    grouped.set(key, [...(grouped.get(key) ?? []), edge]);
  }
  return grouped;
}

/** The root is drawn as a box of its own when it has transitions, or is parallel (regions need a box). */
export const drawsRootBox = (graph: MachineGraph): boolean =>
  graph.root.kind === "parallel" ||
  graph.edges.some((edge) => edge.source === graph.root.id || edge.target === graph.root.id);
