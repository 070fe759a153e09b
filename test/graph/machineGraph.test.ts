import { describe, expect, it } from "vitest";
import type { AnyStateMachine } from "xstate";
import { getStateNodes } from "xstate/graph";
import { MACHINES } from "../../machines/index.ts";
import { allStates, type GraphEdge, machineGraph } from "../../src/graph/machineGraph.ts";
import { inlineGuardMachine, kitchenSinkMachine } from "./kitchenSink.ts";

interface TransitionLike {
  eventType: string;
  target?: { id: string }[];
}

/** Every (source, target, event) the machine defines, read straight off its state nodes. */
function definedTransitions(machine: AnyStateMachine): { source: string; target: string; event: string }[] {
  return [machine.root, ...getStateNodes(machine.root)].flatMap((node) => {
    const transitions = [
      ...[...node.transitions.values()].flat(),
      ...(node.always ?? []),
    ] as unknown as TransitionLike[];
    return transitions.flatMap((t) =>
      (t.target?.length ? t.target : [node]).map((target) => ({
        source: node.id,
        target: target.id,
        event: t.eventType,
      })),
    );
  });
}

const find = (edges: GraphEdge[], source: string, target: string, label: string) =>
  edges.filter((edge) => edge.source === source && edge.target === target && edge.label === label);

describe("machineGraph", () => {
  it.each([...Object.entries(MACHINES), ["kitchenSink", kitchenSinkMachine]] as const)(
    "has every state and every transition of %s",
    (_, machine) => {
      const graph = machineGraph(machine);
      const ids = allStates(graph.root).map((state) => state.id);
      expect(ids.sort()).toEqual([machine.root, ...getStateNodes(machine.root)].map((node) => node.id).sort());
      for (const t of definedTransitions(machine))
        expect(graph.edges.some((e) => e.source === t.source && e.target === t.target && e.event === t.event)).toBe(
          true,
        );
      const keys = graph.edges.map((e) => `${e.source}|${e.target}|${e.label}`);
      expect(new Set(keys).size).toBe(keys.length);
    },
  );

  it("labels the turn machine's guarded, delayed, eventless and invoke transitions readably", () => {
    const { edges, root } = machineGraph(MACHINES.turn!);
    expect(root.initial).toBe("turn.ingest");
    expect(find(edges, "turn.ingest", "turn.sensing_fast", "always")).toHaveLength(1);
    expect(find(edges, "turn.sensed", "turn.safety", "always [safetyRisk]")[0]).toMatchObject({
      kind: "always",
      guard: "safetyRisk",
    });
    expect(find(edges, "turn.sensing_fast", "turn.context", "after stageTimeout")[0]).toMatchObject({
      kind: "after",
      delay: "stageTimeout",
    });
    expect(find(edges, "turn.sensing_fast", "turn.sensed", "senseFast done")[0]?.kind).toBe("invokeDone");
    expect(find(edges, "turn.sensing_fast", "turn.context", "senseFast error")[0]?.kind).toBe("invokeError");
    expect(find(edges, "turn.agents", "turn.deliberation", "done")[0]?.kind).toBe("stateDone");
    expect(find(edges, "turn.agents.wave", "turn.agents.wave", "wave.done [hasMoreWaves]")[0]?.reenter).toBe(true);
    expect(find(edges, "turn.agents.wave", "turn.agents.wave", "agent.replied")[0]?.targetless).toBe(true);
    expect(find(edges, "turn.agents.wave", "turn.agents.wave", "after waveTimeout [hasMoreWaves]")).toHaveLength(1);
    expect(edges.some((edge) => edge.label.includes("xstate."))).toBe(false);
  });

  it("knows parallel, history and final states, composite guards and numeric delays", () => {
    const graph = machineGraph(kitchenSinkMachine);
    const byId = new Map(allStates(graph.root).map((state) => [state.id, state]));
    expect(byId.get("sink.working")?.kind).toBe("parallel");
    expect(byId.get("sink.working")?.initial).toBeUndefined();
    expect(byId.get("sink.working.left")).toMatchObject({ kind: "compound", initial: "sink.working.left.a-b" });
    expect(byId.get("sink.working.left.recall")).toMatchObject({ kind: "history", history: "shallow" });
    expect(byId.get("sink.working.right.deep")).toMatchObject({ kind: "history", history: "deep" });
    expect(byId.get("sink.end")?.kind).toBe("final");
    expect(byId.get("loading")).toMatchObject({ path: ["working", "left", "c"], invokes: ["load"] });
    const { edges } = graph;
    expect(find(edges, "sink.default", "sink.working", "GO [and(ready, !allowed)]")).toHaveLength(1);
    expect(find(edges, "sink.default", "sink.end", "after 500ms")).toHaveLength(1);
    expect(
      find(edges, "sink.working.right.x", "sink.working.right.y", "after patience [or(ready, in(loading))]"),
    ).toHaveLength(1);
    expect(find(edges, "loading", "sink.working.left.finished", "load done")).toHaveLength(1);
    // One transition, two targets: two edges.
    expect(
      edges.filter((edge) => edge.source === "sink.working" && edge.label === "STOP").map((e) => e.target),
    ).toEqual(["sink.working.left.recall", "sink.working.right.deep"]);
    expect(find(edges, "sink", "sink.default", "RESET")).toHaveLength(1);
    const inline = machineGraph(inlineGuardMachine).edges;
    expect(find(inline, "inline.a", "inline.b", "GO [isReady]")).toHaveLength(1);
    expect(find(inline, "inline.b", "inline.a", "BACK [inline guard]")).toHaveLength(1);
  });

  it("is plain JSON", () => {
    const graph = machineGraph(MACHINES.turn!);
    expect(JSON.parse(JSON.stringify(graph))).toEqual(graph);
  });
});
