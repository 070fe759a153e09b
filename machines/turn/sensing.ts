import { assign } from "xstate";
import { modulatorsFromSensors } from "../../src/cognition/workspace.ts";
import { turnSetup } from "./setup.ts";
import { failed, overran } from "./warnings.ts";

/** The fast sensors score the message; a high safety risk leaves for the safety council. */

export const sensingFast = turnSetup.createStateConfig({
  entry: { type: "enterStage", params: { stage: "sensing_fast" } },
  invoke: {
    src: "senseFast",
    input: ({ context }) => ({ text: context.text }),
    onDone: {
      target: "sensed",
      actions: [
        assign(({ context, event }) => ({
          sensors: event.output,
          workspace: {
            ...context.workspace,
            modulators: modulatorsFromSensors(event.output, context.workspace.modulators),
          },
        })),
        {
          type: "record",
          params: ({ event }) => ({
            kind: "SENSORS_FAST_UPDATED",
            payload: { sensors: event.output },
          }),
        },
      ],
    },
    onError: {
      target: "context",
      actions: failed("sensing_fast"),
    },
  },
  after: {
    stageTimeout: {
      target: "context",
      actions: overran("sensing_fast", "fast sensors"),
    },
  },
});

/** Safety early exit: a high safety_risk skips the cognitive stages for the safety council. */
export const sensed = turnSetup.createStateConfig({
  always: [{ guard: "safetyRisk", target: "safety" }, { target: "screening" }],
});
