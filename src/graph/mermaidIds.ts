import { allStates, type MachineGraph } from "./machineGraph.ts";

/**
 * Mermaid state ids for a machine's states. Mermaid's state-diagram lexer
 * takes an id up to a space, `:`, `-` or `{`, and reads some words as keywords
 * (`default` even as a prefix), and ids are global to the diagram: so an id
 * is the state's path below the root joined with `_`, restricted to
 * [A-Za-z0-9_], kept clear of keywords, and made unique.
 */
const KEYWORDS = /^(default.*|state|note|class|classdef|scale|direction|end|hide|acctitle|accdescr|statediagram.*)$/i;

export function mermaidIds(graph: MachineGraph): Map<string, string> {
  const ids = new Map<string, string>();
  const taken = new Set<string>();
  for (const state of allStates(graph.root)) {
    const path = state.path.length === 0 ? state.key : state.path.join("_");
    let base = path.replace(/[^A-Za-z0-9_]/g, "_") || "state";
    if (KEYWORDS.test(base)) base = `s_${base}`;
    let id = base;
    for (let n = 2; taken.has(id); n++) id = `${base}_${n}`;
    taken.add(id);
    ids.set(state.id, id);
  }
  return ids;
}

/** Text Mermaid accepts after `:` on a transition: no `:`, `;`, `#` or line breaks. */
export const mermaidLabel = (text: string): string =>
  text
    .replace(/[:;#\r\n]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();

/** Text Mermaid accepts inside `state "…" as id`. */
export const mermaidName = (text: string): string => mermaidLabel(text.replace(/"/g, "'"));
