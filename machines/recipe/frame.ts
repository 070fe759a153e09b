import { assign, enqueueActions } from "xstate";
import type { RecipeAgentEvent } from "../../src/contracts/recipeProtocol.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { codeOf, messageOf } from "../../src/errors.ts";
import { conditionHolds } from "../../src/recipes/expression.ts";
import { readPath, writePath } from "../../src/recipes/paths.ts";
import { agentPrompt } from "../../src/recipes/prompt.ts";
import type { AgentNode, EvaluatorNode, Recipe, RecipeNode, Transition } from "../../src/recipes/recipe.ts";
import { stateWriteProblem } from "../../src/recipes/stateSchema.ts";
import type { RecipeContext } from "./context.ts";
import { constraintFailure, constraintWarnings } from "./nodeConstraints.ts";
import type { RecipeEvent } from "./setup.ts";

/**
 * What every node's states share: the frame
 *
 *   entering (counts the visit, checks max_steps) → working → routing
 *
 * with its failure and retry handling, the recording of a node's streams
 * and result, its edges as guarded transitions, and the input of an agent
 * call. The states of each node kind are built from these (nodes.ts names
 * each kind's file).
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

export type Record_ = { type: "record"; params: TurnRecord | ((args: Args) => TurnRecord) };

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

export const attemptOf = (context: RecipeContext, node: string) => context.attempts[node] ?? 1;

/** The agent inputs of a node: its `inputs_map` read off the blackboard, or the whole blackboard. */
export function nodeInputs(node: AgentNode, blackboard: JsonObject): JsonObject {
  const names = Object.keys(node.inputs_map);
  if (names.length === 0) return blackboard;
  return Object.fromEntries(names.map((name) => [name, readPath(blackboard, node.inputs_map[name]!).value]));
}

/** The feedback a generator's next attempt carries: its evaluators' critiques on the blackboard. */
export function feedbackFor(recipe: Recipe, nodeId: string, blackboard: JsonObject): string | undefined {
  const critiques = recipe.nodes
    .filter((node): node is EvaluatorNode => node.kind === "evaluator" && node.fail_route === nodeId)
    .map((node) => readPath(blackboard, node.feedback_variable).value)
    .filter((value): value is string => typeof value === "string" && value.length > 0);
  return critiques.length > 0 ? critiques.join("\n") : undefined;
}

/** Records the leaving edge, then goes. */
export const route = (from: string, to: string | null, reason: string): Record_ => ({
  type: "record",
  params: { kind: "ROUTE_TAKEN", payload: { from, to: to ?? "end", reason } },
});

export const failWith = (code: string, message: (context: RecipeContext) => string) =>
  assign(({ context }: Args) => ({ failure: { code, message: message(context) } }));

/** The transitions of `routing` for a node whose edges are `next` (agent, logic, council, human after its answer). */
export function edgeTransitions(node: RecipeNode, exits: Exits, fork: string | null) {
  // A fork head goes on into its fork state, which runs the branches.
  if (fork)
    return [
      refusedWrite(exits),
      { target: fork, actions: [route(node.id, node.next.map((t) => t.target).join(", "), "fork")] },
    ];
  const transitions: StateConfig[] = node.next.map((transition: Transition) => ({
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
  return [refusedWrite(exits), ...transitions];
}

/**
 * `entering` (counts the visit, checks max_steps, records NODE_STARTED,
 * re-checks the recipe's `requirements` against the blackboard as it is
 * now) and the failure handling every node shares.
 */
export function frame(recipe: Recipe, node: RecipeNode, exits: Exits) {
  const visit = [
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
  ];
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
      ...constraintFailure(recipe, node, exits, visit),
      { target: "working", actions: [...visit, constraintWarnings(recipe)] },
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

export const thrownMessage = (event: Args["event"]): string => messageOf(event.error);
export const thrownCode = (event: Args["event"]): string => codeOf(event.error) ?? "node_failed";
export const reportedCode = (event: Args["event"]) => (event.type === "node.failed" ? event.code : "node_failed");
export const reportedMessage = (event: Args["event"]) => (event.type === "node.failed" ? event.message : "failed");
export const answered = (event: Args["event"]) => event as Extract<RecipeAgentEvent, { type: "node.answered" }>;

/** Records a stream part of the node's agent: STREAM_START / STREAM_CHUNK / STREAM_END, chunks numbered per stream. */
export function streamHandlers(nodeId: string): StateConfig {
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
export const closeNodeStreams = (nodeId: string) =>
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
export interface Enqueue {
  (action: { type: "record"; params: TurnRecord }): void;
  assign(values: Partial<RecipeContext>): void;
}

/**
 * Writes a node's result to the blackboard (under `outputKey`) and records
 * NODE_COMPLETED; a write the recipe's `state` refuses is not made: the node
 * fails (NODE_FAILED, code `invalid_state`, naming the variable) and
 * `routing` takes the run to its failing state.
 */
export function completed(
  recipe: Recipe,
  node: RecipeNode,
  outputKey: string | undefined,
  value: (args: Args) => unknown,
  meta: (event: Args["event"]) => {
    agent?: string;
    worker?: string;
    elapsed_ms?: number;
    skills?: string[];
  } = () => ({}),
) {
  return [
    enqueueActions(({ context, event, enqueue }: Args & { enqueue: Enqueue }) => {
      const output = value({ context, event });
      const blackboard = outputKey ? writePath(context.blackboard, outputKey, output) : context.blackboard;
      const problem = outputKey ? stateWriteProblem(recipe, blackboard, outputKey) : null;
      if (problem !== null) {
        enqueue({
          type: "record",
          params: {
            kind: "NODE_FAILED",
            payload: {
              node: node.id,
              kind: node.kind,
              code: "invalid_state",
              message: problem,
              attempt: attemptOf(context, node.id),
              retrying: false,
            },
          },
        });
        enqueue.assign({ failure: { code: "invalid_state", message: `node '${node.id}': ${problem}` } });
        return;
      }
      const details = meta(event);
      enqueue({
        type: "record",
        params: {
          kind: "NODE_COMPLETED",
          payload: {
            node: node.id,
            kind: node.kind,
            ...(outputKey ? { output_key: outputKey } : {}),
            output,
            elapsed_ms: details.elapsed_ms ?? 0,
            ...(details.agent ? { agent: details.agent } : {}),
            ...(details.worker ? { worker: details.worker } : {}),
            ...(details.skills ? { skills: details.skills } : {}),
          },
        },
      });
      enqueue.assign({ blackboard: blackboard as JsonObject });
    }),
  ];
}

/** A node whose result the recipe's `state` refused (`completed`) leaves for the failing state, first thing in `routing`. */
export const refusedWrite = (exits: Exits) => ({
  guard: ({ context }: Args) => context.failure !== null,
  target: exits.failing,
});

/** The input of `callAgent` for a node asking `agent` with `inputs`. */
export function agentCall(
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
    step: context.steps,
  };
}
