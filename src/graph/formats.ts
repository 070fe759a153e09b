import type { AnyStateMachine } from "xstate";
import { toDot } from "./dot.ts";
import { machineGraph } from "./machineGraph.ts";
import { toMermaid } from "./mermaid.ts";

export const GRAPH_FORMATS = ["mermaid", "dot", "json"] as const;
export type GraphFormat = (typeof GRAPH_FORMATS)[number];

export const isGraphFormat = (value: string): value is GraphFormat =>
  (GRAPH_FORMATS as readonly string[]).includes(value);

/** A machine's diagram as text in one of the formats. */
export function renderMachine(machine: AnyStateMachine, format: GraphFormat): string {
  const graph = machineGraph(machine);
  if (format === "mermaid") return toMermaid(graph);
  if (format === "dot") return toDot(graph);
  return `${JSON.stringify(graph, null, 2)}\n`;
}
