import { assign } from "xstate";
import type { RecipeAgentEvent } from "../../src/contracts/recipeProtocol.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import type { AgentNode, Recipe } from "../../src/recipes/recipe.ts";
import {
  type Args,
  agentCall,
  answered,
  completed,
  type Exits,
  edgeTransitions,
  feedbackFor,
  frame,
  nodeInputs,
  reportedCode,
  reportedMessage,
  type StateConfig,
  stateKey,
  streamHandlers,
} from "./frame.ts";

/** An agent node: asks its agent over NATS (streams and all) and writes the answer under `output_key`. */
export function agentNodeState(recipe: Recipe, node: AgentNode, exits: Exits, fork: string | null): StateConfig {
  const { entering, failed } = frame(recipe, node, exits);
  const mine = ({ event }: Args) => "node" in event && event.node === node.id;
  return {
    id: `node-${stateKey(node.id)}`,
    initial: "entering",
    states: {
      entering,
      working: {
        invoke: {
          src: "callAgent",
          input: ({ context }: Args) => {
            const feedback = feedbackFor(recipe, node.id, context.blackboard);
            return agentCall(context, node.id, node.agent, nodeInputs(node, context.blackboard), {
              ...(node.system_prompt ? { system_prompt: node.system_prompt } : {}),
              ...(feedback ? { feedback } : {}),
            });
          },
        },
        on: {
          ...streamHandlers(node.id),
          "node.answered": {
            guard: mine,
            target: "routing",
            actions: [
              ...completed(recipe, node, node.output_key, ({ event }) => answered(event).output, answered),
              assign(({ context, event }: Args) => {
                const usage = answered(event).usage;
                return usage ? { usage: { ...context.usage, [`node:${node.id}`]: usage } } : {};
              }),
            ],
          },
          "node.failed": failed(reportedCode, reportedMessage, mine),
          // A tool call needs a person's approval: the run suspends here and, answered, runs the node again
          // (its finished model and tool calls are given back from the log, not made again).
          "node.approval_required": {
            guard: mine,
            target: exits.suspending,
            actions: [
              assign(({ event }: Args) => {
                const asked = event as Extract<RecipeAgentEvent, { type: "node.approval_required" }>;
                return {
                  suspended_at: node.id,
                  waiting: {
                    prompt: asked.prompt,
                    ...(asked.required_role ? { required_role: asked.required_role } : {}),
                    approval: asked.approval,
                  },
                };
              }),
              {
                type: "record",
                params: ({ event }: Args): TurnRecord => {
                  const asked = event as Extract<RecipeAgentEvent, { type: "node.approval_required" }>;
                  return {
                    kind: "HUMAN_INPUT_REQUESTED",
                    payload: {
                      node: node.id,
                      prompt: asked.prompt,
                      ...(asked.required_role ? { required_role: asked.required_role } : {}),
                      approval: asked.approval,
                    },
                  };
                },
              },
            ],
          },
        },
      },
      routing: { always: edgeTransitions(node, exits, fork) },
    },
  };
}
