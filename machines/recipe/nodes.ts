import { assign, enqueueActions } from "xstate";
import type { RecipeAgentEvent } from "../../src/contracts/recipeProtocol.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { conditionHolds } from "../../src/recipes/expression.ts";
import { readPath, writePath } from "../../src/recipes/paths.ts";
import { agentPrompt } from "../../src/recipes/prompt.ts";
import type {
  AgentNode,
  CouncilNode,
  EvaluatorNode,
  HumanNode,
  LogicNode,
  Recipe,
  RouterNode,
  SwitchNode,
} from "../../src/recipes/recipe.ts";
import { verdictOf } from "../../src/recipes/score.ts";
import type { RecipeContext } from "./context.ts";
import {
  type Args,
  agentCall,
  answered,
  completed,
  type Enqueue,
  type Exits,
  edgeTransitions,
  failWith,
  feedbackFor,
  frame,
  nodeInputs,
  reportedCode,
  reportedMessage,
  route,
  type StateConfig,
  stateKey,
  streamHandlers,
  thrownCode,
  thrownMessage,
} from "./frame.ts";

/**
 * The states of one node. Every node is a compound state
 *
 *   entering (counts the visit, checks max_steps) → working → routing
 *
 * `working` does the node's work (an invoked actor, or nothing for a
 * decision); `routing` takes the first transition whose guard holds. Where a
 * transition leads is the compiler's business (`Exits`): a node inside a
 * fork's branch leaves to its region's end, a node at the top level to the
 * target node's state.
 */

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
              ...completed(node, node.output_key, ({ event }) => answered(event).output, answered),
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

/**
 * A node whose work is one invoked promise actor (`runLogic`, `runCouncil`):
 * its result is written under the node's output key; a failure is retried
 * by policy.
 */
function invokingNodeState(
  recipe: Recipe,
  node: LogicNode | CouncilNode,
  exits: Exits,
  fork: string | null,
  src: "runLogic" | "runCouncil",
  input: (context: RecipeContext) => Record<string, unknown>,
): StateConfig {
  const { entering, failed } = frame(recipe, node, exits);
  return {
    id: `node-${stateKey(node.id)}`,
    initial: "entering",
    states: {
      entering,
      working: {
        invoke: {
          src,
          input: ({ context }: Args) => ({
            session_id: context.session_id,
            turn_id: context.turn_id,
            node: node.id,
            ...input(context),
          }),
          onDone: { target: "routing", actions: completed(node, node.output_key, ({ event }) => event.output) },
          onError: failed(thrownCode, thrownMessage),
        },
      },
      routing: { always: edgeTransitions(node, exits, fork) },
    },
  };
}

/** A workflow `logic` step: the operator's registered handler computes the result from the blackboard. */
export const logicNodeState = (recipe: Recipe, node: LogicNode, exits: Exits, fork: string | null): StateConfig =>
  invokingNodeState(recipe, node, exits, fork, "runLogic", (context) => ({
    handler: node.handler,
    blackboard: context.blackboard,
  }));

/** A workflow `council` step: every voter answers, the votes are tallied. */
export const councilNodeState = (recipe: Recipe, node: CouncilNode, exits: Exits, fork: string | null): StateConfig =>
  invokingNodeState(recipe, node, exits, fork, "runCouncil", (context) => ({
    voters: node.voters,
    strategy: node.strategy,
    inputs: context.blackboard,
    prompt: agentPrompt(context.blackboard),
  }));

/** A router: the value at `input_key`, strictly matched against `routes`, then `default_route`. */
export function routerNodeState(recipe: Recipe, node: RouterNode, exits: Exits): StateConfig {
  const { entering } = frame(recipe, node, exits);
  const routedValue = (context: RecipeContext) => readPath(context.blackboard, node.input_key).value;
  return {
    id: `node-${stateKey(node.id)}`,
    initial: "entering",
    states: {
      entering,
      working: { always: { target: "routing" } },
      routing: {
        always: [
          ...Object.entries(node.routes).map(([value, target]) => ({
            guard: ({ context }: Args) => routeMatches(routedValue(context), value),
            target: exits.to(target),
            actions: [route(node.id, target, `${node.input_key} is '${value}'`)],
          })),
          ...(node.default_route
            ? [
                {
                  target: exits.to(node.default_route),
                  actions: [route(node.id, node.default_route, `no route for ${node.input_key}: default`)],
                },
              ]
            : [
                {
                  target: exits.failing,
                  actions: assign(({ context }: Args) => ({
                    failure: {
                      code: "no_route",
                      message: `router '${node.id}': no route for ${node.input_key} = ${JSON.stringify(routedValue(context)) ?? "undefined"} and no default_route`,
                    },
                  })),
                },
              ]),
        ],
      },
    },
  };
}

/**
 * Strict route matching: a string value matches the route of the same text;
 * a number or boolean matches the route written as its JSON (`3`, `true`);
 * anything else matches nothing.
 */
export function routeMatches(value: unknown, route: string): boolean {
  if (typeof value === "string") return value === route;
  if (typeof value === "number" || typeof value === "boolean") return JSON.stringify(value) === route;
  return false;
}

/** A workflow `switch`: the first case whose condition holds, else `default`. */
export function switchNodeState(recipe: Recipe, node: SwitchNode, exits: Exits): StateConfig {
  const { entering } = frame(recipe, node, exits);
  const cases = node.next.filter((transition) => transition.when);
  return {
    id: `node-${stateKey(node.id)}`,
    initial: "entering",
    states: {
      entering,
      working: { always: { target: "routing" } },
      routing: {
        always: [
          ...cases.map((transition) => ({
            guard: ({ context }: Args) => conditionHolds(transition.when!, context.blackboard),
            target: exits.to(transition.target),
            actions: [route(node.id, transition.target, `case ${transition.label ?? "condition"} held`)],
          })),
          node.default
            ? {
                target: exits.to(node.default),
                actions: [route(node.id, node.default, "no case held: default")],
              }
            : {
                target: exits.failing,
                actions: failWith("no_route", () => `switch '${node.id}': no case held and it has no default`),
              },
        ],
      },
    },
  };
}

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
                ...completed(node, undefined, ({ event }) => answered(event).output, answered),
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
            actions: [...completed(node, node.output_key, ({ context }) => answerFor(context)!.answer), consume],
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
