import { turnSetup } from "./setup.ts";

/** The ingest stage: the turn starts in the log. */

export const ingest = turnSetup.createStateConfig({
  entry: [
    {
      type: "record",
      params: ({ context }) => ({
        kind: "TURN_STARTED",
        payload: {
          user_input: context.text,
          turn_id: context.turn_id,
          ...(context.user_id ? { user_id: context.user_id } : {}),
          ...(context.pipeline ? { pipeline: context.pipeline } : {}),
        },
      }),
    },
    { type: "enterStage", params: { stage: "ingest" } },
  ],
  // A turn cancelled before it started ends at once: TURN_STARTED, then TURN_COMPLETED (Cancelled).
  always: [{ guard: "cancelledBeforeStart", target: "completed" }, { target: "sensing_fast" }],
});
