import { assign, enqueueActions } from "xstate";
import type { RecipeAgentEvent } from "../../src/contracts/recipeProtocol.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
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
  RecipeNode,
  RouterNode,
  SwitchNode,
  Transition,
} from "../../src/recipes/recipe.ts";
import { verdictOf } from "../../src/recipes/score.ts";
import type { RecipeContext } from "./context.ts";
import type { RecipeEvent } from "./setup.ts";

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

/** Where leaving for a node (or the end, null) goes from the node being built. */
export interface Exits {
  to(target: string | null): string;
  /** The run failed: its failing state. */
  readonly failing: string;
  readonly suspending: string;
  /** Record a checkpoint when the node starts (a top-level node: a run may go on from there). */
  readonly checkpoint: boolean;
}

type Record_ = { type: "record"; params: TurnRecord | ((args: Args) => TurnRecord) };

/** What an inline guard or action of a recipe machine is given. */
export interface Args {
  context: RecipeContext;
  event: RecipeEvent & { output?: unknown; error?: unknown };
}

/**
 * A state's config as the compiler builds it: generated from data, so it is
 * checked as a whole when `compileRecipe` hands it to `recipeSetup.createMachine`.
 */
// biome-ignore lint/suspicious/noExplicitAny: a generated config, typed by createMachine where it is assembled
export type StateConfig = Record<string, any>;

/** The state key (and id suffix) of a node: '.' and '#' would be read as paths by XState. */
export const stateKey = (id: string): string => id.replace(/[.#]/g, "_");

const attemptOf = (context: RecipeContext, node: string) => context.attempts[node] ?? 1;

/** The agent inputs of a node: its `inputs_map` read off the blackboard, or the whole blackboard. */
export function nodeInputs(node: AgentNode, blackboard: JsonObject): JsonObject {
  const names = Object.keys(node.inputs_map);
  if (names.length === 0) return blackboard;
  return Object.fromEntries(names.map((name) => [name, readPath(blackboard, node.inputs_map[name]!).value]));
}

/** The feedback a generator's next attempt carries: its evaluators' critiques on the blackboard. */
function feedbackFor(recipe: Recipe, nodeId: string, blackboard: JsonObject): string | undefined {
  const critiques = recipe.nodes
    .filter((node): node is EvaluatorNode => node.kind === "evaluator" && node.fail_route === nodeId)
    .map((node) => readPath(blackboard, node.feedback_variable).value)
    .filter((value): value is string => typeof value === "string" && value.length > 0);
  return critiques.length > 0 ? critiques.join("\n") : undefined;
}

/** Records the leaving edge, then goes. */
const route = (from: string, to: string | null, reason: string): Record_ => ({
  type: "record",
  params: { kind: "ROUTE_TAKEN", payload: { from, to: to ?? "end", reason } },
});

const failWith = (code: string, message: (context: RecipeContext) => string) =>
  assign(({ context }: Args) => ({ failure: { code, message: message(context) } }));

/** The transitions of `routing` for a node whose edges are `next` (agent, logic, council, human after its answer). */
function edgeTransitions(node: RecipeNode, exits: Exits, fork: string | null) {
  // A fork head goes on into its fork state, which runs the branches.
  if (fork) return [{ target: fork, actions: [route(node.id, node.next.map((t) => t.target).join(", "), "fork")] }];
  const transitions = node.next.map((transition: Transition) => ({
    ...(transition.when ? { guard: ({ context }: Args) => conditionHolds(transition.when!, context.blackboard) } : {}),
    target: exits.to(transition.target),
    actions: [route(node.id, transition.target, transition.label ?? (transition.when ? "condition held" : "edge"))],
  }));
  // No edge (or none whose condition holds): this path of the graph ends here.
  const ends = node.next.length === 0 || node.next.every((transition) => transition.when);
  if (ends)
    transitions.push({
      target: exits.to(null),
      actions: [route(node.id, null, node.next.length === 0 ? "no edge" : "no condition held")],
    });
  return transitions;
}

/** `entering` (counts the visit, checks max_steps, records NODE_STARTED) and the failure handling every node shares. */
function frame(recipe: Recipe, node: RecipeNode, exits: Exits) {
  const entering: StateConfig = {
    always: [
      {
        guard: ({ context }: Args) => context.steps >= recipe.policy.max_steps,
        target: exits.failing,
        actions: failWith(
          "max_steps",
          () => `the run visited ${recipe.policy.max_steps} nodes (policy max_steps) and was stopped at '${node.id}'`,
        ),
      },
      {
        target: "working",
        actions: [
          assign(({ context }: Args) => ({
            steps: context.steps + 1,
            attempts: { ...context.attempts, [node.id]: 1 },
          })),
          {
            type: "record",
            params: ({ context }: Args): TurnRecord => ({
              kind: "NODE_STARTED",
              payload: {
                node: node.id,
                kind: node.kind,
                step: context.steps,
                attempt: 1,
                // Taken after the visit was counted: a run going on from here counts this visit again.
                ...(exits.checkpoint
                  ? {
                      checkpoint: {
                        blackboard: context.blackboard,
                        steps: context.steps - 1,
                        refinements: context.refinements,
                      },
                    }
                  : {}),
              },
            }),
          },
        ],
      },
    ],
  };
  const failure =
    (code: (event: Args["event"]) => string, message: (event: Args["event"]) => string) => (retrying: boolean) => ({
      type: "record",
      params: ({ context, event }: Args): TurnRecord => ({
        kind: "NODE_FAILED",
        payload: {
          node: node.id,
          kind: node.kind,
          code: code(event),
          message: message(event),
          attempt: attemptOf(context, node.id),
          retrying,
        },
      }),
    });
  /** A failed attempt: again while policy.max_retries allows, else the run fails. */
  const failed = (
    code: (event: Args["event"]) => string,
    message: (event: Args["event"]) => string,
    mine: (args: Args) => boolean = () => true,
  ) => {
    const recorded = failure(code, message);
    return [
      {
        guard: (args: Args) => mine(args) && attemptOf(args.context, node.id) <= recipe.policy.max_retries,
        target: "working",
        reenter: true,
        actions: [
          closeNodeStreams(node.id),
          recorded(true),
          assign(({ context }: Args) => ({
            attempts: { ...context.attempts, [node.id]: attemptOf(context, node.id) + 1 },
          })),
        ],
      },
      {
        guard: mine,
        target: exits.failing,
        actions: [
          recorded(false),
          assign(({ context, event }: Args) => ({
            failure: {
              code: code(event),
              message: `node '${node.id}' failed after ${attemptOf(context, node.id)} attempt(s): ${message(event)}`,
            },
          })),
        ],
      },
    ];
  };
  return { entering, failed };
}

const thrownMessage = (event: Args["event"]): string =>
  event.error instanceof Error ? event.error.message : String(event.error);
const thrownCode = (event: Args["event"]): string => {
  const code = (event.error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? code : "node_failed";
};
const reportedCode = (event: Args["event"]) => (event.type === "node.failed" ? event.code : "node_failed");
const reportedMessage = (event: Args["event"]) => (event.type === "node.failed" ? event.message : "failed");
const answered = (event: Args["event"]) => event as Extract<RecipeAgentEvent, { type: "node.answered" }>;

/** Records a stream part of the node's agent: STREAM_START / STREAM_CHUNK / STREAM_END, chunks numbered per stream. */
function streamHandlers(nodeId: string): StateConfig {
  const mine = ({ event }: Args) => "node" in event && event.node === nodeId;
  return {
    "node.stream.start": {
      guard: mine,
      actions: enqueueActions(({ context, event, enqueue }: Args & { enqueue: Enqueue }) => {
        if (event.type !== "node.stream.start" || event.stream_id in context.open_streams) return;
        enqueue.assign({ open_streams: { ...context.open_streams, [event.stream_id]: 0 } });
        enqueue({
          type: "record",
          params: {
            kind: "STREAM_START",
            payload: {
              stream_id: event.stream_id,
              content_type: event.content_type,
              attempt: attemptOf(context, nodeId),
            },
          },
        });
      }),
    },
    "node.stream.chunk": {
      guard: mine,
      actions: enqueueActions(({ context, event, enqueue }: Args & { enqueue: Enqueue }) => {
        if (event.type !== "node.stream.chunk" || !(event.stream_id in context.open_streams)) return;
        const index = context.open_streams[event.stream_id]!;
        enqueue.assign({ open_streams: { ...context.open_streams, [event.stream_id]: index + 1 } });
        enqueue({
          type: "record",
          params: { kind: "STREAM_CHUNK", payload: { stream_id: event.stream_id, index, delta: event.delta } },
        });
      }),
    },
    "node.stream.end": {
      guard: mine,
      actions: enqueueActions(({ context, event, enqueue }: Args & { enqueue: Enqueue }) => {
        if (event.type !== "node.stream.end" || !(event.stream_id in context.open_streams)) return;
        const { [event.stream_id]: chunks, ...rest } = context.open_streams;
        enqueue.assign({ open_streams: rest });
        enqueue({
          type: "record",
          params: { kind: "STREAM_END", payload: { stream_id: event.stream_id, chunks: chunks ?? 0 } },
        });
      }),
    },
    "node.stream.intercepted": {
      guard: mine,
      actions: {
        type: "record",
        params: ({ event }: Args): TurnRecord => {
          const part = event as Extract<RecipeAgentEvent, { type: "node.stream.intercepted" }>;
          return {
            kind: "RESPONSE_INTERCEPTED",
            payload: {
              interceptor: part.interceptor,
              action: part.action,
              reason: part.reason,
              stream_id: part.stream_id,
            },
          };
        },
      },
    },
  };
}

/**
 * Ends the node's own streams still open (a failed attempt's): the retry
 * opens them afresh. Other nodes' streams (a parallel branch) stay open.
 */
const closeNodeStreams = (nodeId: string) =>
  enqueueActions(({ context, enqueue }: Args & { enqueue: Enqueue }) => {
    const mine = Object.entries(context.open_streams).filter(([id]) => id.startsWith(`${nodeId}:`));
    if (mine.length === 0) return;
    for (const [streamId, chunks] of mine)
      enqueue({ type: "record", params: { kind: "STREAM_END", payload: { stream_id: streamId, chunks } } });
    enqueue.assign({
      open_streams: Object.fromEntries(
        Object.entries(context.open_streams).filter(([id]) => !id.startsWith(`${nodeId}:`)),
      ),
    });
  });

/** What `enqueueActions` gives its callback to enqueue with (the subset used here). */
interface Enqueue {
  (action: { type: "record"; params: TurnRecord }): void;
  assign(values: Partial<RecipeContext>): void;
}

/** Writes a node's result to the blackboard (under `outputKey`) and records NODE_COMPLETED. */
function completed(
  node: RecipeNode,
  outputKey: string | undefined,
  value: (args: Args) => unknown,
  meta: (event: Args["event"]) => { agent?: string; worker?: string; elapsed_ms?: number } = () => ({}),
) {
  return [
    {
      type: "record",
      params: (args: Args): TurnRecord => {
        const details = meta(args.event);
        return {
          kind: "NODE_COMPLETED",
          payload: {
            node: node.id,
            kind: node.kind,
            ...(outputKey ? { output_key: outputKey } : {}),
            output: value(args),
            elapsed_ms: details.elapsed_ms ?? 0,
            ...(details.agent ? { agent: details.agent } : {}),
            ...(details.worker ? { worker: details.worker } : {}),
          },
        };
      },
    },
    assign((args: Args) => ({
      blackboard: outputKey ? writePath(args.context.blackboard, outputKey, value(args)) : args.context.blackboard,
    })),
  ];
}

/** The input of `callAgent` for a node asking `agent` with `inputs`. */
function agentCall(
  context: RecipeContext,
  nodeId: string,
  agent: string,
  inputs: JsonObject,
  extra: { system_prompt?: string; feedback?: string } = {},
) {
  return {
    session_id: context.session_id,
    turn_id: context.turn_id,
    node: nodeId,
    agent,
    inputs,
    prompt: agentPrompt(inputs, extra.feedback),
    ...(extra.system_prompt ? { system_prompt: extra.system_prompt } : {}),
    ...(extra.feedback ? { feedback: extra.feedback } : {}),
    attempt: attemptOf(context, nodeId),
  };
}

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
