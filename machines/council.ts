import { assign, fromPromise, setup } from "xstate";
import type { CouncilReply, CouncilRequest } from "../src/contracts/council.ts";
import { MissingActorError } from "./errors.ts";

/**
 * The council deciding one turn: deciding → decided | failed. `decide` (the
 * offline rules or an LLM call) is provided by the worker.
 */
export interface CouncilOutput {
  status: "decided" | "failed";
  reply?: CouncilReply;
  error?: string;
}

export const councilMachine = setup({
  types: {
    input: {} as CouncilRequest,
    context: {} as { request: CouncilRequest; reply: CouncilReply | null; error: string | null },
    output: {} as CouncilOutput,
  },
  actors: {
    decide: fromPromise<CouncilReply, CouncilRequest>(async () => {
      throw new MissingActorError("decide", "council", "worker");
    }),
  },
}).createMachine({
  id: "council",
  context: ({ input }) => ({ request: input, reply: null, error: null }),
  initial: "deciding",
  states: {
    deciding: {
      invoke: {
        src: "decide",
        input: ({ context }) => context.request,
        onDone: { target: "decided", actions: assign({ reply: ({ event }) => event.output }) },
        onError: { target: "failed", actions: assign({ error: ({ event }) => String(event.error) }) },
      },
    },
    decided: { type: "final" },
    failed: { type: "final" },
  },
  output: ({ context }) =>
    context.reply
      ? { status: "decided", reply: context.reply }
      : { status: "failed", error: context.error ?? "unknown" },
});
