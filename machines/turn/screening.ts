import { assign } from "xstate";
import { REFUSAL_REPLY, zeroSensors } from "./context.ts";
import { turnSetup } from "./setup.ts";
import { failed, overran } from "./warnings.ts";

/** The request interceptors may redact the message or refuse the turn. */

/** The request interceptors see the message and the sensors' scores: they may redact it or refuse the turn. */
export const screening = turnSetup.createStateConfig({
  invoke: {
    src: "screen",
    input: ({ context }) => ({
      session_id: context.session_id,
      turn_id: context.turn_id,
      text: context.text,
      sensors: context.sensors ?? zeroSensors(),
    }),
    onDone: {
      target: "screened",
      actions: [
        assign({ text: ({ event }) => event.output.text, blocked: ({ event }) => event.output.blocked }),
        { type: "recordInterceptions", params: ({ event }) => event.output.interceptions },
      ],
    },
    onError: { target: "context", actions: failed("sensing_fast", "interceptors") },
  },
  after: { stageTimeout: { target: "context", actions: overran("sensing_fast", "request interceptors") } },
});

export const screened = turnSetup.createStateConfig({
  always: [
    {
      guard: "requestBlocked",
      target: "completed",
      actions: [
        assign({ response: REFUSAL_REPLY }),
        { type: "record", params: { kind: "VOICE_RENDERED", payload: { text: REFUSAL_REPLY, attempt: 1 } } },
      ],
    },
    { target: "context" },
  ],
});
