import { assign } from "xstate";
import { agentContext, decisionPayload, mergeUsage, voiceRequest } from "./context.ts";
import { turnSetup } from "./setup.ts";
import { failed, overran, voiceFailed, voiceFellBack } from "./warnings.ts";

/** The council stage: the council decides, and the voice streams the reply. */

export const council = turnSetup.createStateConfig({
  entry: { type: "enterStage", params: { stage: "council" } },
  initial: "deciding",
  states: {
    deciding: {
      invoke: {
        src: "decide",
        input: ({ context }) => ({
          session_id: context.session_id,
          turn_id: context.turn_id,
          context: {
            ...agentContext(context),
            consensus: context.consensus,
            proposals: context.workspace.proposals,
          },
        }),
        onDone: {
          target: "decided",
          actions: [
            assign(({ context, event }) => ({
              decision: event.output.decision,
              usage: mergeUsage(context.usage, event.output.usage ? { council: event.output.usage } : {}),
            })),
            {
              type: "record",
              params: ({ event }) => ({
                kind: "COUNCIL_DECISION_MADE",
                payload: {
                  ...decisionPayload(event.output.decision),
                  ...(event.output.usage ? { usage: event.output.usage } : {}),
                  ...(event.output.fallback ? { fallback: event.output.fallback } : {}),
                },
              }),
            },
            { type: "fellBack", params: ({ event }) => ({ subject: "council", fallback: event.output.fallback }) },
          ],
        },
        onError: { target: "done", actions: failed("council", "council") },
      },
    },
    decided: {
      always: [{ guard: "councilSpeaks", target: "speaking" }, { target: "done" }],
    },
    /** The voice streams the reply (and its thinking) as it renders. */
    speaking: {
      invoke: {
        src: "renderVoice",
        input: ({ context }) => voiceRequest(context),
        onError: { target: "done", actions: failed("council", "voice") },
      },
      on: {
        "voice.start": { actions: "openStream" },
        "voice.chunk": { actions: "streamChunk" },
        "voice.end": { actions: "closeStream" },
        "voice.done": { target: "done", actions: ["acceptRendering", voiceFellBack] },
        "voice.intercepted": { actions: "recordResponseInterception" },
        "voice.failed": { target: "done", actions: ["closeOpenStreams", voiceFailed("council")] },
      },
    },
    done: { type: "final" },
  },
  onDone: "critics",
  after: {
    stageTimeout: { target: "critics", actions: ["closeOpenStreams", overran("council", "council and voice")] },
  },
});
