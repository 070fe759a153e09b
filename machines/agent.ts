import { assign, fromPromise, setup } from "xstate";
import type { AgentAnswer, AgentRequest } from "../src/contracts/agent.ts";
import { codeOf, messageOf } from "../src/errors.ts";
import { MissingActorError } from "./errors.ts";

/**
 * One agent answering one request, inside a worker:
 *
 *   idle → thinking → replied | failed
 *
 * `think` (the offline rule path or an LLM call) is provided by the worker.
 * The request's own budget is the deadline: a `think` that overruns it is
 * stopped (its abort signal fires) and the agent fails with `timeout`.
 * Sending `cancel` stops it the same way.
 */
export interface AgentMachineOutput {
  agent_id: string;
  status: "replied" | "failed";
  /** The agent's answer: its own output and its contribution. */
  answer?: AgentAnswer;
  error?: {
    code: "timeout" | "agent_failed" | "invalid_agent_output" | "delegation_depth_exceeded";
    message: string;
  };
}

/** Failures that keep their own code in the reply: anything else is the agent failing. */
const KEPT_CODES = ["invalid_agent_output", "delegation_depth_exceeded"] as const;
const keptCode = (error: unknown): (typeof KEPT_CODES)[number] | undefined => {
  const code = codeOf(error);
  return KEPT_CODES.find((kept) => kept === code);
};

export const agentMachine = setup({
  types: {
    input: {} as AgentRequest,
    context: {} as { request: AgentRequest; answer: AgentAnswer | null; error: AgentMachineOutput["error"] | null },
    events: {} as { type: "start" } | { type: "cancel" },
    output: {} as AgentMachineOutput,
  },
  actors: {
    think: fromPromise<AgentAnswer, AgentRequest>(async () => {
      throw new MissingActorError("think", "agent", "worker");
    }),
  },
  delays: {
    deadline: ({ context }) => context.request.timeout_ms,
  },
}).createMachine({
  id: "agent",
  context: ({ input }) => ({ request: input, answer: null, error: null }),
  initial: "idle",
  states: {
    idle: {
      on: { start: "thinking", cancel: "failed" },
    },
    thinking: {
      invoke: {
        src: "think",
        input: ({ context }) => context.request,
        onDone: { target: "replied", actions: assign({ answer: ({ event }) => event.output }) },
        onError: {
          target: "failed",
          actions: assign({
            error: ({ event }) => ({
              // An answer the agent's schema rejects, or a delegation too deep, keeps its own code.
              code: keptCode(event.error) ?? ("agent_failed" as const),
              message: messageOf(event.error),
            }),
          }),
        },
      },
      after: {
        deadline: {
          target: "failed",
          actions: assign({
            error: ({ context }) => ({
              code: "timeout" as const,
              message: `agent ${context.request.agent_id} did not finish within ${context.request.timeout_ms} ms`,
            }),
          }),
        },
      },
      on: {
        cancel: {
          target: "failed",
          actions: assign({ error: { code: "agent_failed" as const, message: "cancelled" } }),
        },
      },
    },
    replied: { type: "final" },
    failed: { type: "final" },
  },
  output: ({ context }) => ({
    agent_id: context.request.agent_id,
    status: context.answer ? "replied" : "failed",
    ...(context.answer ? { answer: context.answer } : {}),
    ...(context.error ? { error: context.error } : {}),
  }),
});
