import { assign } from "xstate";
import { verdictPassed } from "../../src/cognition/critics.ts";
import { mergeUsage, voiceRequest } from "./context.ts";
import { turnSetup } from "./setup.ts";
import { failed, overran, voiceFailed, voiceFellBack } from "./warnings.ts";

/** The critics stage: the evaluator loop of critics and re-renderings. */

/**
 * Critics judge the reply. Evaluator-optimizer loop: when one fails, the
 * voice re-renders with the critics' feedback, up to the policy's retries,
 * and only if the council speaks; a reply that still fails (or that no critic
 * could judge) is kept and the failure recorded.
 */
export const critics = turnSetup.createStateConfig({
  entry: { type: "enterStage", params: { stage: "critics" } },
  initial: "judging",
  states: {
    judging: {
      invoke: {
        src: "runCritics",
        input: ({ context }) => ({
          session_id: context.session_id,
          turn_id: context.turn_id,
          user_message: context.text,
          response: context.response,
          speech_act: context.decision?.speech_act ?? { intent: "none", key_points: [], do_not: [] },
          attempt: context.attempt,
        }),
        onDone: {
          target: "verdict",
          actions: [
            assign(({ context, event }) => ({
              critics: event.output.results,
              usage: mergeUsage(context.usage, event.output.usage),
            })),
            {
              type: "record",
              params: ({ context, event }) => ({
                kind: "CRITICS_UPDATED",
                payload: {
                  results: event.output.results,
                  passed: verdictPassed(event.output.results),
                  attempt: context.attempt,
                  ...(event.output.failures.length > 0 ? { failures: event.output.failures } : {}),
                  ...(Object.keys(event.output.usage).length > 0 ? { usage: event.output.usage } : {}),
                },
              }),
            },
            { type: "criticsUnreachable", params: ({ event }) => event.output.failures },
          ],
        },
        onError: { target: "done", actions: failed("critics", "critics") },
      },
    },
    verdict: {
      always: [
        { guard: "criticsPassed", target: "done" },
        {
          guard: "mayRetryVoice",
          target: "revising",
          actions: assign(({ context }) => ({
            feedback: context.critics.filter((result) => !result.passed).map((result) => result.feedback),
            attempt: context.attempt + 1,
          })),
        },
        { target: "done", actions: "criticsOverruled" },
      ],
    },
    /** The voice renders again, with the critics' feedback appended. */
    revising: {
      invoke: {
        src: "renderVoice",
        input: ({ context }) => voiceRequest(context),
        onError: { target: "done", actions: failed("critics", "voice") },
      },
      on: {
        "voice.start": { actions: "openStream" },
        "voice.chunk": { actions: "streamChunk" },
        "voice.end": { actions: "closeStream" },
        "voice.done": { target: "judging", actions: ["acceptRendering", voiceFellBack] },
        "voice.intercepted": { actions: "recordResponseInterception" },
        "voice.failed": { target: "done", actions: ["closeOpenStreams", voiceFailed("critics")] },
      },
    },
    done: { type: "final" },
  },
  onDone: "memory_commit",
  after: {
    stageTimeout: { target: "memory_commit", actions: ["closeOpenStreams", overran("critics", "critics")] },
  },
});
