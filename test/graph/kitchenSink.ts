import { and, assign, createMachine, fromPromise, not, or, setup, stateIn } from "xstate";

/**
 * A machine with every construct the diagram writers must draw: parallel
 * regions, shallow and deep history, nested finals, numeric and named delays,
 * composite guards, a transition with two targets, a root-level transition,
 * and state keys Mermaid would misread (`default`, `end`, `a-b`).
 */
export const kitchenSinkMachine = setup({
  types: { events: {} as { type: "GO" } | { type: "STOP" } | { type: "RESET" } | { type: "TOGGLE" } },
  actors: { load: fromPromise(async () => 1) },
  guards: { ready: () => true, allowed: () => true },
  delays: { patience: 1_000 },
}).createMachine({
  id: "sink",
  initial: "default",
  on: { RESET: { target: ".default", actions: assign({}) } },
  states: {
    default: { on: { GO: { target: "working", guard: and(["ready", not("allowed")]) } }, after: { 500: "end" } },
    working: {
      type: "parallel",
      states: {
        left: {
          initial: "a-b",
          states: {
            "a-b": { on: { TOGGLE: "c" } },
            c: { id: "loading", invoke: { src: "load", onDone: "finished", onError: "a-b" } },
            finished: { type: "final" },
            recall: { type: "history", history: "shallow" },
          },
        },
        right: {
          initial: "x",
          states: {
            x: { after: { patience: { target: "y", guard: or(["ready", stateIn("#loading")]) } } },
            y: { always: { target: "x", guard: "allowed" } },
            deep: { type: "history", history: "deep" },
          },
        },
      },
      onDone: "end",
      on: {
        STOP: { target: ["#sink.working.left.recall", "#sink.working.right.deep"] },
        TOGGLE: { actions: () => {} },
      },
    },
    end: { type: "final" },
  },
});

/** The same shape without setup, for a machine whose guards are inline functions. */
export const inlineGuardMachine = createMachine({
  id: "inline",
  initial: "a",
  states: {
    a: {
      on: {
        GO: {
          target: "b",
          guard: function isReady() {
            return true;
          },
        },
      },
    },
    b: { on: { BACK: { target: "a", guard: () => true } } },
  },
});
