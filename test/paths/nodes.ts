import {
  Actor,
  type AnyEventObject,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type AnyStateNode,
  type AnyTransitionDefinition,
  getStateNodes,
} from "xstate";

/** What a snapshot of a machine is in, through XState's public API: active states, invokes, children, transitions taken. */

/** The active state nodes of a snapshot, root first, in document order. */
export const activeNodes = (snapshot: AnyMachineSnapshot): AnyStateNode[] =>
  [...new Set(getStateNodes(snapshot.machine.root, snapshot.value))].sort((a, b) => a.order - b.order);

/** The active state nodes of a snapshot, by id. */
export const nodeIds = (snapshot: AnyMachineSnapshot): string[] => activeNodes(snapshot).map((node) => node.id);

/** The event types the active states of a snapshot handle (what `xstate/graph` tries by default). */
export const ownEvents = (snapshot: AnyMachineSnapshot): string[] => [
  ...new Set(activeNodes(snapshot).flatMap((node) => node.ownEvents)),
];

/** The initial state nodes a machine enters before any eventless transition: the root and its initial children. */
export function initialConfiguration(machine: AnyStateMachine): AnyStateNode[] {
  const nodes: AnyStateNode[] = [];
  let node: AnyStateNode | undefined = machine.root;
  while (node) {
    nodes.push(node);
    node = node.type === "compound" ? node.initial?.target[0] : undefined;
  }
  return nodes;
}

/**
 * The transitions a microstep of a live actor took, from the snapshot before it:
 * for an event, the machine's own `getTransitionData`; for an eventless microstep,
 * the first `always` transition whose guard holds, from each atomic state or its
 * nearest ancestor that has one (the SCXML selection XState follows; these
 * machines have no parallel states, so no conflicts to resolve). Before the first
 * microstep of an actor the machine is in its initial states.
 */
export function takenTransitions(
  before: AnyMachineSnapshot | undefined,
  after: AnyMachineSnapshot,
  event: AnyEventObject,
  eventless: boolean,
): AnyTransitionDefinition[] {
  const machine = after.machine;
  if (!eventless) {
    if (!before) throw new Error(`a microstep on ${event.type} before the actor had a snapshot`);
    return machine.getTransitionData(before, event);
  }
  const nodes = before ? activeNodes(before) : initialConfiguration(machine);
  // Guards read the context before the microstep (the first one's, which no transition has changed yet).
  const context = (before ?? after).context;
  const holds = (transition: AnyTransitionDefinition): boolean => {
    const guard = transition.guard;
    if (guard === undefined) return true;
    if (typeof guard === "function") return guard({ context, event }, undefined);
    const { type, params } = typeof guard === "string" ? { type: guard, params: undefined } : guard;
    const implementation = machine.implementations.guards[type as string];
    if (typeof implementation !== "function") throw new Error(`guard ${String(type)} has no implementation`);
    return implementation({ context, event }, params);
  };
  const taken: AnyTransitionDefinition[] = [];
  for (const atomic of nodes.filter((node) => node.type === "atomic" || node.type === "final")) {
    for (let node: AnyStateNode | undefined = atomic; node; node = node.parent) {
      const enabled = node.always?.find(holds);
      if (enabled) {
        if (!taken.includes(enabled)) taken.push(enabled);
        break;
      }
    }
  }
  return taken;
}

/** The `src` of the invoke with this id among the active states. */
export function invokeSrc(snapshot: AnyMachineSnapshot, id: string): string {
  for (const node of activeNodes(snapshot)) {
    const invoke = node.invoke.find((candidate) => candidate.id === id);
    if (invoke) return typeof invoke.src === "string" ? invoke.src : id;
  }
  throw new Error(`no invoke ${id} in ${JSON.stringify(snapshot.value)}`);
}

/** The input an invoked child was started with (in a traversal its actor exists but never runs). */
export function childInput(snapshot: AnyMachineSnapshot, id: string): unknown {
  const child = snapshot.children[id];
  if (!(child instanceof Actor)) throw new Error(`no child ${id} in ${JSON.stringify(snapshot.value)}`);
  return child.options.input;
}

export const DONE_ACTOR = "xstate.done.actor.";
export const ERROR_ACTOR = "xstate.error.actor.";
export const AFTER = "xstate.after.";
export const DONE_STATE = "xstate.done.state.";
