import { assign, fromPromise, setup } from "xstate";
import type { CriticReply, CriticRequest } from "../src/contracts/critic.ts";
import { MissingActorError } from "./errors.ts";

/**
 * One critic judging one rendering: judging → judged | errored. A judged
 * reply may pass or fail; `errored` means the critic could not judge at all.
 */
export interface CriticInput {
  critic: string;
  request: CriticRequest;
}
export interface CriticOutput {
  status: "judged" | "errored";
  reply?: CriticReply;
  error?: string;
}

export const criticMachine = setup({
  types: {
    input: {} as CriticInput,
    context: {} as CriticInput & { reply: CriticReply | null; error: string | null },
    output: {} as CriticOutput,
  },
  actors: {
    judge: fromPromise<CriticReply, CriticInput>(async () => {
      throw new MissingActorError("judge", "critic", "worker");
    }),
  },
}).createMachine({
  id: "critic",
  context: ({ input }) => ({ ...input, reply: null, error: null }),
  initial: "judging",
  states: {
    judging: {
      invoke: {
        src: "judge",
        input: ({ context }) => ({ critic: context.critic, request: context.request }),
        onDone: { target: "judged", actions: assign({ reply: ({ event }) => event.output }) },
        onError: { target: "errored", actions: assign({ error: ({ event }) => String(event.error) }) },
      },
    },
    judged: { type: "final" },
    errored: { type: "final" },
  },
  output: ({ context }) =>
    context.reply
      ? { status: "judged", reply: context.reply }
      : { status: "errored", error: context.error ?? "unknown" },
});
