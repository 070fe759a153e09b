import { drawsRootBox, edgesByContainer } from "./containers.ts";
import type { GraphState, MachineGraph } from "./machineGraph.ts";
import { mermaidIds, mermaidLabel, mermaidName } from "./mermaidIds.ts";

/**
 * A Mermaid `stateDiagram-v2` of a machine. Compound states are composite
 * states, a parallel state's regions are separated by `--`, `[*]` marks each
 * initial and final state, history states read `H` / `H*`.
 */
export function toMermaid(graph: MachineGraph): string {
  const ids = mermaidIds(graph);
  const id = (stateId: string) => ids.get(stateId) ?? stateId;
  const edges = edgesByContainer(graph);
  const lines = ["stateDiagram-v2"];
  const emit = (depth: number, line: string) => lines.push(`${"  ".repeat(depth)}${line}`);

  const emitEdges = (container: string | null, depth: number) => {
    for (const edge of edges.get(container) ?? [])
      emit(depth, `${id(edge.source)} --> ${id(edge.target)} : ${mermaidLabel(edge.label)}`);
  };

  const emitState = (state: GraphState, depth: number) => {
    const name = state.kind === "history" ? `${state.key} (${state.history === "deep" ? "H*" : "H"})` : state.key;
    if (state.children.length === 0) {
      emit(depth, name === id(state.id) ? id(state.id) : `state "${mermaidName(name)}" as ${id(state.id)}`);
      return;
    }
    // No space before `{`: Mermaid would keep it as part of the id after `as`.
    emit(depth, name === id(state.id) ? `state ${id(state.id)} {` : `state "${mermaidName(name)}" as ${id(state.id)}{`);
    emitBody(state, depth + 1);
    emit(depth, "}");
  };

  const emitBody = (state: GraphState, depth: number) => {
    if (state.initial) emit(depth, `[*] --> ${id(state.initial)}`);
    state.children.forEach((child, index) => {
      if (state.kind === "parallel" && index > 0) emit(depth, "--");
      emitState(child, depth);
    });
    emitEdges(state.id, depth);
    for (const child of state.children) if (child.kind === "final") emit(depth, `${id(child.id)} --> [*]`);
  };

  if (drawsRootBox(graph)) {
    emit(1, `[*] --> ${id(graph.root.id)}`);
    emitState(graph.root, 1);
    emitEdges(null, 1);
  } else {
    emitBody(graph.root, 1);
    emitEdges(null, 1);
  }
  const history = [...ids].filter(([stateId]) => stateOf(graph.root, stateId)?.kind === "history");
  if (history.length > 0) {
    emit(1, "classDef history font-style:italic,stroke-dasharray:4 2");
    emit(1, `class ${history.map(([, mermaidId]) => mermaidId).join(",")} history`);
  }
  return `${lines.join("\n")}\n`;
}

function stateOf(state: GraphState, id: string): GraphState | undefined {
  if (state.id === id) return state;
  for (const child of state.children) {
    const found = stateOf(child, id);
    if (found) return found;
  }
  return undefined;
}
