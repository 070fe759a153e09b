import { assign } from "xstate";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import type { HumanNode, Recipe } from "../../src/recipes/recipe.ts";
import type { RecipeContext } from "./context.ts";
import {
  type Args,
  completed,
  type Exits,
  edgeTransitions,
  failWith,
  frame,
  route,
  type StateConfig,
  stateKey,
} from "./frame.ts";

/** An approval answer that says no. */
export function rejects(answer: unknown): boolean {
  if (answer === false) return true;
  if (typeof answer === "string") return /^(no|n|reject(ed)?|deny|denied|false)$/i.test(answer.trim());
  if (typeof answer === "object" && answer !== null && "approved" in answer)
    return (answer as { approved: unknown }).approved === false;
  return false;
}

/**
 * A human node. Without an answer for it, the run suspends (its checkpoint
 * is in the log; no process holds it). Resumed with one, the answer is
 * written under `output_key` and the run goes on; a timed-out wait goes to
 * `timeout_route`, or fails the run.
 */
export function humanNodeState(recipe: Recipe, node: HumanNode, exits: Exits, fork: string | null): StateConfig {
  const { entering } = frame(recipe, node, exits);
  const answerFor = (context: RecipeContext) => (context.answer?.node === node.id ? context.answer : null);
  const consume = assign(() => ({ answer: null }));
  return {
    id: `node-${stateKey(node.id)}`,
    initial: "entering",
    states: {
      entering,
      working: {
        always: [
          {
            guard: ({ context }: Args) => answerFor(context)?.timed_out === true,
            target: node.timeout_route ? exits.to(node.timeout_route) : exits.failing,
            actions: [
              ...(node.timeout_route
                ? [route(node.id, node.timeout_route, "nobody answered in time")]
                : [failWith("human_timeout", () => `human node '${node.id}': nobody answered in time`)]),
              consume,
            ],
          },
          {
            guard: ({ context }: Args) => node.approval === true && rejects(answerFor(context)?.answer),
            target: exits.failing,
            actions: [
              failWith(
                "rejected",
                (context) =>
                  `'${node.id}': rejected${answerFor(context)?.user_id ? ` by ${answerFor(context)!.user_id}` : ""}`,
              ),
              consume,
            ],
          },
          {
            guard: ({ context }: Args) => answerFor(context) !== null,
            target: "routing",
            actions: [
              ...completed(recipe, node, node.output_key, ({ context }) => answerFor(context)!.answer),
              consume,
            ],
          },
          {
            target: exits.suspending,
            actions: [
              assign(() => ({ suspended_at: node.id })),
              {
                type: "record",
                params: (): TurnRecord => ({
                  kind: "HUMAN_INPUT_REQUESTED",
                  payload: {
                    node: node.id,
                    prompt: node.prompt,
                    ...(node.required_role ? { required_role: node.required_role } : {}),
                  },
                }),
              },
            ],
          },
        ],
      },
      routing: { always: edgeTransitions(node, exits, fork) },
    },
  };
}
