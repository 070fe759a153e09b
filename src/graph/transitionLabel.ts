import type { EdgeKind } from "./machineGraph.ts";

/**
 * How a transition reads on a diagram: the event (XState's internal event types
 * made readable), then the guard in brackets.
 *
 *   agent.replied            an ordinary event
 *   wave.done [hasMoreWaves] a guarded one
 *   after stageTimeout       a delayed (`after`) transition, by delay name or in ms
 *   always [safetyRisk]      an eventless transition
 *   senseFast done           the invoked actor `senseFast` finished (`onDone`)
 *   senseFast error          … or failed (`onError`)
 *   done                     the state's own final child was reached (state `onDone`)
 */
export function transitionLabel(
  stateId: string,
  transition: { eventType: string; guard?: unknown; delay?: string | number },
  invokes: ReadonlyMap<string, string>,
): { label: string; kind: EdgeKind } {
  const { text, kind } = eventText(stateId, transition, invokes);
  const guard = transition.guard === undefined ? "" : ` [${guardName(transition.guard)}]`;
  return { label: `${text}${guard}`, kind };
}

function eventText(
  stateId: string,
  transition: { eventType: string; delay?: string | number },
  invokes: ReadonlyMap<string, string>,
): { text: string; kind: EdgeKind } {
  const type = transition.eventType;
  if (type === "") return { text: "always", kind: "always" };
  if (transition.delay !== undefined || type.startsWith("xstate.after.")) {
    const delay = transition.delay ?? type.slice("xstate.after.".length).split(".")[0];
    return { text: `after ${typeof delay === "number" ? `${delay}ms` : delay}`, kind: "after" };
  }
  for (const [prefix, word, kind] of [
    ["xstate.done.actor.", "done", "invokeDone"],
    ["xstate.error.actor.", "error", "invokeError"],
  ] as const) {
    if (type.startsWith(prefix)) {
      const invokeId = type.slice(prefix.length);
      return { text: `${invokes.get(invokeId) ?? invokeId} ${word}`, kind };
    }
  }
  if (type === `xstate.done.state.${stateId}`) return { text: "done", kind: "stateDone" };
  if (type.startsWith("xstate.snapshot."))
    return { text: `${type.slice("xstate.snapshot.".length)} snapshot`, kind: "other" };
  if (type === "xstate.route") return { text: "route", kind: "other" };
  return { text: type, kind: "event" };
}

/** A guard by name: `hasWaves`, `and(a, b)`, `or(a, b)`, `!a`, `in(state)`; inline functions by their name. */
export function guardName(guard: unknown): string {
  if (typeof guard === "string") return guard;
  if (typeof guard === "function") {
    const fn = guard as { name: string; guards?: unknown[]; stateValue?: unknown };
    if (fn.guards && fn.name === "not") return `!${guardName(fn.guards[0])}`;
    if (fn.guards && (fn.name === "and" || fn.name === "or"))
      return `${fn.name}(${fn.guards.map(guardName).join(", ")})`;
    if (fn.stateValue !== undefined && fn.name === "stateIn")
      return `in(${typeof fn.stateValue === "string" ? fn.stateValue.replace(/^#/, "") : JSON.stringify(fn.stateValue)})`;
    // An arrow function written as `guard: () => …` takes the name "guard": it has none of its own.
    return fn.name && fn.name !== "guard" ? fn.name : "inline guard";
  }
  return (guard as { type?: string } | null)?.type ?? "guard";
}
