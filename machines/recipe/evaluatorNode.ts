import { assign, enqueueActions } from "xstate";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { readPath, writePath } from "../../src/recipes/paths.ts";
import type { EvaluatorNode, Recipe } from "../../src/recipes/recipe.ts";
import { verdictOf } from "../../src/recipes/score.ts";
import { stateWriteProblem } from "../../src/recipes/stateSchema.ts";
import type { RecipeContext } from "./context.ts";
import {
  type Args,
  agentCall,
  answered,
  completed,
  type Enqueue,
  type Exits,
  failWith,
  frame,
  reportedCode,
  reportedMessage,
  route,
  type StateConfig,
  stateKey,
  streamHandlers,
} from "./frame.ts";

/**
 * LLM-as-a-judge: the judge scores `target_variable`; a pass goes to
 * `pass_route`; a fail writes the critique to `feedback_variable` (which the
 * generator's next prompt carries) and goes to `fail_route`, at most
 * `max_refinements` times, after which the run goes on by the pass route
 * with a warning.
 */
export function evaluatorNodeState(recipe: Recipe, node: EvaluatorNode, exits: Exits): StateConfig {
  const { entering, failed } = frame(recipe, node, exits);
  const mine = ({ event }: Args) => "node" in event && event.node === node.id;
  const refinements = (context: RecipeContext) => context.refinements[node.id] ?? 0;
  const verdict = (context: RecipeContext) => context.scores[node.id]!;
  const passes = ({ context }: Args) => verdict(context).score >= node.pass_threshold;
  const feedbackProblem = (context: RecipeContext) =>
    stateWriteProblem(
      recipe,
      writePath(context.blackboard, node.feedback_variable, verdict(context).critique),
      node.feedback_variable,
    );
  const scored = (passed: boolean): { type: "record"; params: (args: Args) => TurnRecord } => ({
    type: "record",
    params: ({ context }: Args) => ({
      kind: "EVALUATION_SCORED",
      payload: {
        node: node.id,
        score: verdict(context).score,
        passed,
        refinement: refinements(context),
        critique: verdict(context).critique,
      },
    }),
  });
  return {
    id: `node-${stateKey(node.id)}`,
    initial: "entering",
    states: {
      entering,
      working: {
        invoke: {
          src: "callAgent",
          input: ({ context }: Args) =>
            agentCall(context, node.id, node.judge, {
              target: readPath(context.blackboard, node.target_variable).value,
              criteria: node.profile,
              pass_threshold: node.pass_threshold,
            }),
        },
        on: {
          ...streamHandlers(node.id),
          "node.answered": [
            {
              guard: (args: Args) => mine(args) && verdictOf(answered(args.event).output) !== null,
              target: "routing",
              actions: [
                assign(({ context, event }: Args) => ({
                  scores: { ...context.scores, [node.id]: verdictOf(answered(event).output)! },
                })),
                ...completed(recipe, node, undefined, ({ event }) => answered(event).output, answered),
              ],
            },
            ...failed(
              () => "invalid_verdict",
              (event) =>
                `judge '${node.judge}' answered without a score: ${JSON.stringify(answered(event).output)?.slice(0, 200)}`,
              mine,
            ),
          ],
          "node.failed": failed(reportedCode, reportedMessage, mine),
        },
      },
      routing: {
        always: [
          {
            guard: passes,
            target: exits.to(node.pass_route),
            actions: [scored(true), route(node.id, node.pass_route, "passed")],
          },
          {
            // The critique is a write of the feedback variable: one the recipe's state refuses fails the run.
            guard: ({ context }: Args) =>
              refinements(context) < node.max_refinements && feedbackProblem(context) !== null,
            target: exits.failing,
            actions: [
              scored(false),
              failWith("invalid_state", (context) => `node '${node.id}': ${feedbackProblem(context)}`),
            ],
          },
          {
            guard: ({ context }: Args) => refinements(context) < node.max_refinements,
            target: exits.to(node.fail_route),
            actions: [
              scored(false),
              assign(({ context }: Args) => ({
                blackboard: writePath(context.blackboard, node.feedback_variable, verdict(context).critique),
                refinements: { ...context.refinements, [node.id]: refinements(context) + 1 },
              })),
              route(node.id, node.fail_route, "below the pass threshold: refine"),
            ],
          },
          {
            target: exits.to(node.pass_route),
            actions: [
              scored(false),
              enqueueActions(({ context, enqueue }: Args & { enqueue: Enqueue }) => {
                const warning = {
                  stage: "recipe" as const,
                  code: "refinements_exhausted",
                  message: `evaluator '${node.id}': still below ${node.pass_threshold} after ${node.max_refinements} refinement(s); going on with the last attempt`,
                  subject: node.id,
                };
                enqueue.assign({ warnings: [...context.warnings, warning] });
                enqueue({ type: "record", params: { kind: "STAGE_WARNING", payload: warning } });
              }),
              route(node.id, node.pass_route, "max_refinements reached"),
            ],
          },
        ],
      },
    },
  };
}
