import { assign } from "xstate";
import { decisionPayload } from "./context.ts";
import { turnSetup } from "./setup.ts";
import { failed, overran } from "./warnings.ts";

/** The safety early exit: the safety council answers, and the turn completes. */

export const safety = turnSetup.createStateConfig({
  entry: [
    // An early exit, not a pipeline stage (no TURN_STAGE_CHANGED), but warnings raised here say "safety".
    assign({ stage: "safety" as const }),
    {
      type: "record",
      params: ({ context }) => ({
        kind: "SAFETY_INTERRUPT",
        payload: {
          reason: "high_safety_risk",
          sensor: "safety_risk",
          value: context.sensors?.safety_risk ?? 0,
        },
      }),
    },
  ],
  invoke: {
    src: "safetyCouncil",
    input: ({ context }) => ({
      session_id: context.session_id,
      turn_id: context.turn_id,
      user_message: context.text,
      reason: "high_safety_risk",
    }),
    onDone: {
      target: "completed",
      actions: [
        assign({
          decision: ({ event }) => event.output.decision,
          response: ({ event }) => event.output.text,
        }),
        {
          type: "record",
          params: ({ event }) => ({
            kind: "COUNCIL_DECISION_MADE",
            payload: decisionPayload(event.output.decision),
          }),
        },
        {
          type: "record",
          params: ({ event }) => ({
            kind: "VOICE_RENDERED",
            payload: { text: event.output.text, attempt: 1 },
          }),
        },
      ],
    },
    onError: {
      target: "completed",
      actions: [failed("safety"), "answerSafely"],
    },
  },
  after: {
    stageTimeout: {
      target: "completed",
      actions: [overran("safety", "safety council"), "answerSafely"],
    },
  },
});
