import { describe, expect, it } from "vitest";
import { MACHINES } from "../../machines/index.ts";
import { toDot } from "../../src/graph/dot.ts";
import { allStates, machineGraph } from "../../src/graph/machineGraph.ts";
import { readDot } from "./dotShape.ts";
import { kitchenSinkMachine } from "./kitchenSink.ts";

const machines = [...Object.entries(MACHINES), ["kitchenSink", kitchenSinkMachine]] as const;

describe("toDot", () => {
  it.each(machines)(
    "gives %s a node per state and a cluster per compound state, nested as in the machine",
    (_, machine) => {
      const graph = machineGraph(machine);
      const dot = readDot(toDot(graph));
      expect(dot.name).toBe(graph.id);
      const states = allStates(graph.root);
      const parentOf = (id: string) => states.find((state) => state.children.some((child) => child.id === id));
      for (const state of states) {
        const node = dot.nodes.get(state.id);
        if (state === graph.root && !dot.clusters.has(`cluster_${state.id}`)) continue;
        expect(node, state.id).toBeDefined();
        const parent = parentOf(state.id);
        const enclosing = state.children.length > 0 ? `cluster_${state.id}` : parent ? `cluster_${parent.id}` : null;
        expect(node?.cluster === enclosing || (node?.cluster === null && parent === graph.root)).toBe(true);
        if (state.children.length > 0) {
          const cluster = dot.clusters.get(`cluster_${state.id}`);
          expect(cluster?.attributes.label).toContain(state.key);
          if (state.kind === "parallel") expect(cluster?.attributes.style).toContain("dashed");
        }
        if (state.kind === "final") expect(node?.attributes.peripheries).toBe("2");
        if (state.kind === "history") expect(node?.attributes).toMatchObject({ shape: "circle" });
        if (state.initial)
          expect(dot.edges.some((e) => e.from === `${state.id}.[*]` && e.to === state.initial)).toBe(true);
      }
    },
  );

  it.each(machines)("draws every transition of %s once, clipped at clusters it leaves or enters", (_, machine) => {
    const graph = machineGraph(machine);
    const dot = readDot(toDot(graph));
    const labelled = dot.edges.filter((edge) => edge.attributes.label);
    expect(labelled.map((e) => `${e.from} ${e.to} ${e.attributes.label}`).sort()).toEqual(
      graph.edges.map((e) => `${e.source} ${e.target} ${e.label}`).sort(),
    );
    for (const edge of dot.edges)
      for (const end of ["lhead", "ltail"] as const)
        if (edge.attributes[end]) expect(dot.clusters.has(edge.attributes[end]!)).toBe(true);
  });

  it("styles delayed, eventless and failure edges apart", () => {
    const dot = readDot(toDot(machineGraph(MACHINES.turn!)));
    const edge = (label: string) =>
      dot.edges.find((e) => e.from === "turn.sensing_fast" && e.attributes.label === label);
    expect(edge("after stageTimeout")?.attributes.style).toBe("dashed");
    expect(edge("senseFast error")?.attributes.color).toBeDefined();
    const into = dot.edges.find((e) => e.from === "turn.context" && e.to === "turn.agents");
    expect(into?.attributes.lhead).toBe("cluster_turn.agents");
  });
});
