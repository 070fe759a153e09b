import type { AnyStateMachine } from "xstate";
import { type DirectedGraphNode, toDirectedGraph } from "xstate/graph";
import { guardName, transitionLabel } from "./transitionLabel.ts";

/**
 * A machine's states and transitions as plain, JSON-safe data: what the Mermaid
 * and DOT writers and the viewer draw. Built from `toDirectedGraph`, plus the
 * eventless (`always`) transitions it leaves out.
 */
export type StateKind = "atomic" | "compound" | "parallel" | "final" | "history";

export interface GraphState {
  /** The XState id: the path from the root joined with dots (`turn.agents.planning`), unless set in the config. */
  id: string;
  key: string;
  /** Keys from the root's child down to this state (`["agents", "planning"]`); empty for the root. */
  path: string[];
  kind: StateKind;
  /** Only for history states. */
  history?: "shallow" | "deep";
  /** Id of the child a compound state starts in. */
  initial?: string;
  /** The `src` of every actor the state invokes. */
  invokes: string[];
  children: GraphState[];
}

export type EdgeKind = "event" | "after" | "always" | "invokeDone" | "invokeError" | "stateDone" | "other";

export interface GraphEdge {
  source: string;
  target: string;
  /** What a diagram writes on the edge, e.g. `wave.done [hasMoreWaves]`, `after stageTimeout`. */
  label: string;
  kind: EdgeKind;
  /** The XState event type (`""` for eventless transitions). */
  event: string;
  guard?: string;
  delay?: string | number;
  /** A transition without a target: it runs actions and stays in the state. */
  targetless: boolean;
  reenter: boolean;
  actions: string[];
}

export interface MachineGraph {
  id: string;
  root: GraphState;
  edges: GraphEdge[];
}

// The parts of a state node and transition definition read here (typed loosely by xstate).
interface StateNodeLike {
  id: string;
  key: string;
  path: string[];
  type: string;
  history?: false | "shallow" | "deep";
  initial?: { target?: readonly StateNodeLike[] };
  invoke: readonly { id: string; src: unknown }[];
  always?: readonly TransitionLike[];
}
interface TransitionLike {
  eventType: string;
  guard?: unknown;
  delay?: string | number;
  target?: readonly StateNodeLike[];
  reenter?: boolean;
  actions: readonly unknown[];
}

const srcName = (src: unknown): string =>
  typeof src === "string" ? src : ((src as { id?: string } | null)?.id ?? "inline actor");

const actionName = (action: unknown): string => {
  if (typeof action === "string") return action;
  if (typeof action === "function") return (action as { type?: string }).type ?? (action.name || "inline action");
  return (action as { type?: string } | null)?.type ?? "inline action";
};

function stateOf(node: DirectedGraphNode): GraphState {
  const stateNode = node.stateNode as unknown as StateNodeLike;
  const kind = (["compound", "parallel", "final", "history"] as const).find((k) => k === stateNode.type) ?? "atomic";
  const initial = kind === "compound" ? stateNode.initial?.target?.[0]?.id : undefined;
  return {
    id: stateNode.id,
    key: stateNode.key,
    path: [...stateNode.path],
    kind,
    ...(kind === "history" ? { history: stateNode.history === "deep" ? "deep" : "shallow" } : {}),
    ...(initial ? { initial } : {}),
    invokes: stateNode.invoke.map((invoke) => srcName(invoke.src)),
    children: node.children.map(stateOf),
  };
}

function edgesOf(stateNode: StateNodeLike, transition: TransitionLike): GraphEdge[] {
  const invokes = new Map(stateNode.invoke.map((invoke) => [invoke.id, srcName(invoke.src)]));
  const { label, kind } = transitionLabel(stateNode.id, transition, invokes);
  const guard = transition.guard === undefined ? undefined : guardName(transition.guard);
  const targets = transition.target?.length ? transition.target : [stateNode];
  return targets.map((target) => ({
    source: stateNode.id,
    target: target.id,
    label,
    kind,
    event: transition.eventType,
    ...(guard ? { guard } : {}),
    ...(transition.delay !== undefined ? { delay: transition.delay } : {}),
    targetless: !transition.target?.length,
    reenter: transition.reenter ?? false,
    actions: transition.actions.map(actionName),
  }));
}

function collectEdges(node: DirectedGraphNode, into: GraphEdge[]): void {
  const stateNode = node.stateNode as unknown as StateNodeLike;
  // toDirectedGraph draws one edge per target; re-derive them from the transitions
  // so that targetless ones are known, and add the eventless ones it omits.
  const transitions = new Set(node.edges.map((edge) => edge.transition as unknown as TransitionLike));
  for (const transition of [...transitions, ...(stateNode.always ?? [])]) into.push(...edgesOf(stateNode, transition));
  for (const child of node.children) collectEdges(child, into);
}

/** Two transitions that draw the same (source, target, label) are drawn once. */
function withoutDuplicates(edges: GraphEdge[]): GraphEdge[] {
  const seen = new Set<string>();
  return edges.filter((edge) => {
    const key = `${edge.source}\u0000${edge.target}\u0000${edge.label}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export function machineGraph(machine: AnyStateMachine): MachineGraph {
  const directed = toDirectedGraph(machine);
  const edges: GraphEdge[] = [];
  collectEdges(directed, edges);
  return { id: machine.id, root: stateOf(directed), edges: withoutDuplicates(edges) };
}

/** Every state of the graph, parents before children. */
export function allStates(state: GraphState): GraphState[] {
  return [state, ...state.children.flatMap(allStates)];
}
