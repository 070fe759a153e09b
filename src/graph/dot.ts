import { drawsRootBox, edgesByContainer } from "./containers.ts";
import type { EdgeKind, GraphEdge, GraphState, MachineGraph } from "./machineGraph.ts";

/**
 * A Graphviz DOT digraph of a machine. A compound or parallel state is a
 * cluster (dashed for parallel) holding an invisible anchor node that edges to
 * and from the state attach to (clipped at the cluster with `lhead`/`ltail`);
 * a point marks each initial state, final states have a double border,
 * history states are circles reading `H` / `H*`.
 */
const quote = (text: string) => `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
const cluster = (stateId: string) => `cluster_${stateId}`;
const initialNode = (stateId: string) => `${stateId}.[*]`;

const EDGE_STYLE: Record<EdgeKind, string> = {
  event: "",
  after: ", style=dashed",
  always: ", style=dotted",
  invokeDone: "",
  invokeError: ', color="#b03030", fontcolor="#b03030"',
  stateDone: "",
  other: "",
};

export function toDot(graph: MachineGraph): string {
  const edges = edgesByContainer(graph);
  const compound = new Set<string>();
  const parents = new Map<string, string>();
  const visit = (state: GraphState) => {
    if (state.children.length > 0) compound.add(state.id);
    for (const child of state.children) {
      parents.set(child.id, state.id);
      visit(child);
    }
  };
  visit(graph.root);
  const inside = (id: string, stateId: string): boolean => {
    for (let at: string | undefined = id; at !== undefined; at = parents.get(at)) if (at === stateId) return true;
    return false;
  };

  const lines = [
    `digraph ${quote(graph.id)} {`,
    "  compound=true;",
    '  node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=9];',
  ];
  const emit = (depth: number, line: string) => lines.push(`${"  ".repeat(depth)}${line}`);

  // Clip at a cluster's border only when the other end is outside that cluster.
  const emitEdge = (edge: GraphEdge, depth: number) => {
    const ends = [
      compound.has(edge.source) && !inside(edge.target, edge.source) ? `, ltail=${quote(cluster(edge.source))}` : "",
      compound.has(edge.target) && !inside(edge.source, edge.target) ? `, lhead=${quote(cluster(edge.target))}` : "",
    ].join("");
    emit(
      depth,
      `${quote(edge.source)} -> ${quote(edge.target)} [label=${quote(edge.label)}${ends}${EDGE_STYLE[edge.kind]}];`,
    );
  };

  const emitState = (state: GraphState, depth: number) => {
    if (state.children.length === 0) {
      const attributes =
        state.kind === "history"
          ? `shape=circle, label=${quote(state.history === "deep" ? "H*" : "H")}, tooltip=${quote(state.key)}`
          : `label=${quote(state.key)}${state.kind === "final" ? ", peripheries=2" : ""}`;
      emit(depth, `${quote(state.id)} [${attributes}];`);
      return;
    }
    emit(depth, `subgraph ${quote(cluster(state.id))} {`);
    emit(depth + 1, `label=${quote(state.kind === "parallel" ? `${state.key} (parallel)` : state.key)};`);
    emit(depth + 1, `style=${state.kind === "parallel" ? '"rounded,dashed"' : "rounded"};`);
    emit(depth + 1, `${quote(state.id)} [shape=point, style=invis, width=0, height=0, label=""];`);
    emitBody(state, depth + 1);
    emit(depth, "}");
  };

  // Nodes before edges: an edge mentioning a node first would place it in the edge's subgraph.
  const emitBody = (state: GraphState, depth: number) => {
    for (const child of state.children) emitState(child, depth);
    if (state.initial) {
      const start = quote(initialNode(state.id));
      const lhead = compound.has(state.initial) ? ` [lhead=${quote(cluster(state.initial))}]` : "";
      emit(depth, `${start} [shape=point, width=0.12, label=""];`);
      emit(depth, `${start} -> ${quote(state.initial)}${lhead};`);
    }
    for (const edge of edges.get(state.id) ?? []) emitEdge(edge, depth);
  };

  if (drawsRootBox(graph)) {
    emitState(graph.root, 1);
    for (const edge of edges.get(null) ?? []) emitEdge(edge, 1);
  } else {
    emitBody(graph.root, 1);
    for (const edge of edges.get(null) ?? []) emitEdge(edge, 1);
  }
  lines.push("}");
  return `${lines.join("\n")}\n`;
}
