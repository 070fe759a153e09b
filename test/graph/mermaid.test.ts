import { describe, expect, it } from "vitest";
import { MACHINES } from "../../machines/index.ts";
import { allStates, type GraphState, machineGraph } from "../../src/graph/machineGraph.ts";
import { toMermaid } from "../../src/graph/mermaid.ts";
import { mermaidIds } from "../../src/graph/mermaidIds.ts";
import { inlineGuardMachine, kitchenSinkMachine } from "./kitchenSink.ts";
import { readMermaid } from "./mermaidSyntax.ts";

const machines = [
  ...Object.entries(MACHINES),
  ["kitchenSink", kitchenSinkMachine],
  ["inlineGuard", inlineGuardMachine],
] as const;

describe("toMermaid", () => {
  it.each(machines)("draws every state of %s once, nested as in the machine, with Mermaid-safe ids", (_, machine) => {
    const graph = machineGraph(machine);
    const ids = mermaidIds(graph);
    const diagram = readMermaid(toMermaid(graph));
    const boxed = diagram.states.has(ids.get(graph.root.id)!);
    const check = (state: GraphState, parent: string | null) => {
      const id = ids.get(state.id)!;
      expect(id).toMatch(/^[A-Za-z0-9_]+$/);
      expect(diagram.states.get(id)).toMatchObject({ parent, composite: state.children.length > 0 });
      expect(diagram.states.get(id)?.label).toContain(state.key);
      for (const child of state.children) check(child, id);
    };
    if (boxed) check(graph.root, null);
    else for (const child of graph.root.children) check(child, null);
    expect(diagram.states.size).toBe(allStates(graph.root).length - (boxed ? 0 : 1));
  });

  it.each(machines)("draws every transition of %s once, and [*] for each initial and final state", (_, machine) => {
    const graph = machineGraph(machine);
    const ids = mermaidIds(graph);
    const diagram = readMermaid(toMermaid(graph));
    const labelled = diagram.edges.filter((edge) => edge.label !== null);
    expect(labelled.map((e) => `${e.from} ${e.to} ${e.label}`).sort()).toEqual(
      graph.edges.map((e) => `${ids.get(e.source)} ${ids.get(e.target)} ${e.label}`).sort(),
    );
    const lines = diagram.edges.map((e) => `${e.parent} ${e.from} ${e.to} ${e.label}`);
    expect(new Set(lines).size).toBe(lines.length);
    // Mermaid moves a state into the last block that mentions it: an edge sits inside a
    // block only when both ends are that block's own states, else at the top level.
    for (const edge of labelled)
      if (edge.parent !== null)
        for (const end of [edge.from, edge.to])
          expect(diagram.states.get(end)?.parent, `${end} in ${edge.parent}`).toBe(edge.parent);

    const states = allStates(graph.root);
    const parentOf = (state: GraphState) => {
      const parent = states.find((candidate) => candidate.children.includes(state));
      return parent && diagram.states.has(ids.get(parent.id)!) ? ids.get(parent.id)! : null;
    };
    const starts = diagram.edges.filter((edge) => edge.from === "[*]");
    const ends = diagram.edges.filter((edge) => edge.to === "[*]");
    for (const state of states.filter((s) => s.initial))
      expect(starts).toContainEqual({
        from: "[*]",
        to: ids.get(state.initial!),
        label: null,
        parent: diagram.states.has(ids.get(state.id)!) ? ids.get(state.id) : null,
      });
    for (const state of states.filter((s) => s.kind === "final"))
      expect(ends).toContainEqual({ from: ids.get(state.id), to: "[*]", label: null, parent: parentOf(state) });
    const boxedRoot = diagram.states.has(ids.get(graph.root.id)!);
    expect(starts).toHaveLength(states.filter((s) => s.initial).length + (boxedRoot ? 1 : 0));
    expect(ends).toHaveLength(states.filter((s) => s.kind === "final").length);
  });

  it("separates parallel regions with -- and marks history states", () => {
    const text = toMermaid(machineGraph(kitchenSinkMachine));
    expect(text).toMatch(
      /state working \{\n\s+state "left" as working_left\{[\s\S]*\n\s+--\n\s+state "right" as working_right\{/,
    );
    expect(text).toContain('state "recall (H)" as working_left_recall');
    expect(text).toContain('state "deep (H*)" as working_right_deep');
    expect(text).toContain("class working_left_recall,working_right_deep history");
    // `default` and `end` would be read as keywords.
    expect(text).toContain('state "default" as s_default');
    expect(text).toContain('state "end" as s_end');
  });

  it("draws the turn machine's stages in order, with its deadlines and its safety exit", () => {
    const text = toMermaid(machineGraph(MACHINES.turn!));
    for (const line of [
      "[*] --> ingest",
      "ingest --> sensing_fast : always",
      "sensed --> safety : always [safetyRisk]",
      "sensing_fast --> context : after stageTimeout",
      "agents --> deliberation : done",
      "agents_planned --> agents_wave : always [hasWaves]",
      "memory_commit --> completed : commitMemory done",
      "completed --> [*]",
    ])
      expect(text).toContain(line);
  });
});
