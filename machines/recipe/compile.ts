import { assign, enqueueActions } from "xstate";
import type { RecipeRunOutput } from "../../src/contracts/recipeProtocol.ts";
import { type TurnOutcome, type TurnWarning, turnOutcome } from "../../src/contracts/turn.ts";
import { type TurnRecord, usageSummary } from "../../src/contracts/turnProtocol.ts";
import { codeOf, messageOf } from "../../src/errors.ts";
import { checkConstraints } from "../../src/recipes/constraints.ts";
import { type GraphShape, graphShape } from "../../src/recipes/forks.ts";
import type { HumanNode, Recipe, RecipeNode } from "../../src/recipes/recipe.ts";
import { stateWriteProblem } from "../../src/recipes/stateSchema.ts";
import type { RecipeContext } from "./context.ts";
import { initialRecipeContext } from "./context.ts";
import { type Args, type Exits, type StateConfig, stateKey } from "./frame.ts";
import { warnedIndexes } from "./nodeConstraints.ts";
import { nodeState } from "./nodes.ts";
import { recipeSetup } from "./setup.ts";

/**
 * Compiles a recipe into a statechart: one state per node, forks as
 * parallel (or sequential) states, conditions as guards. The machine is
 * pure: its agents, councils, logic handlers and blackboard store are actors
 * the host provides (`machine.provide(...)`), and every event of the run's
 * log is a `record` action.
 *
 *   starting → loading (the session's blackboard, then the inputs over it)
 *            → preflight (constraints) → run (the nodes) → finishing → completed
 *   a human node without an answer → suspending → suspended (a final state)
 *   failure anywhere → failing → completed (Failed)
 *
 * A run resumed (a takeover, or a suspension answered) starts at the node
 * its checkpoint names, with the checkpoint's blackboard.
 */
export function compileRecipe(recipe: Recipe) {
  const prepared = withApprovals(recipe);
  const shape = graphShape(prepared);
  const byId = new Map(prepared.nodes.map((node) => [node.id, node]));
  const topLevel = prepared.nodes.filter((node) => !shape.forkOf.has(node.id));
  const states: Record<string, StateConfig> = {};
  const topExits: Exits = {
    to: (target) => (target === null ? "#recipe.finishing" : `#node-${stateKey(target)}`),
    failing: "#recipe.failing",
    suspending: "#recipe.suspending",
    checkpoint: true,
  };
  for (const node of topLevel) {
    const fork = shape.forks.get(node.id);
    states[stateKey(node.id)] = nodeState(prepared, node, topExits, fork ? `#fork-${stateKey(node.id)}` : null);
    if (fork) states[`${stateKey(node.id)}__fork`] = forkState(prepared, byId, shape, node.id);
  }
  const timeout = prepared.policy.timeout_seconds;
  return recipeSetup
    .createMachine({
      id: "recipe",
      context: initialRecipeContext,
      initial: "starting",
      on: {
        "turn.cancel": {
          target: ".completed",
          actions: assign(({ event }) => ({ cancelled: event.reason })),
        },
        "turn.interrupt": {
          target: ".completed",
          actions: enqueueActions(({ context, event, enqueue }) => {
            const warning = {
              stage: "recipe" as const,
              code: "interrupted",
              message: `interrupted by turn ${event.by_turn_id}`,
            };
            enqueue.assign({
              warnings: [...context.warnings, warning],
              failure: { code: "interrupted", message: warning.message },
            });
            enqueue({ type: "record", params: { kind: "STAGE_WARNING", payload: warning } });
          }),
        },
      },
      states: {
        starting: {
          always: [
            { guard: ({ context }) => context.cancelled !== null, target: "completed" },
            ...topLevel.map((node) => ({
              guard: ({ context }: Args) => context.resume_at === node.id,
              target: `#node-${stateKey(node.id)}`,
            })),
            { target: "loading" },
          ],
        },
        loading: {
          invoke: {
            src: "loadBlackboard",
            input: ({ context }) => ({ session_id: context.session_id, turn_id: context.turn_id }),
            onDone: [
              {
                // An input is a write of its variable: one the recipe's state refuses fails the run.
                guard: ({ context }) => inputsProblem(prepared, context.inputs) !== null,
                target: "failing",
                actions: assign(({ context }) => ({
                  failure: { code: "invalid_state", message: inputsProblem(prepared, context.inputs)! },
                })),
              },
              {
                target: "preflight",
                // The inputs seed the blackboard, over what the session's earlier runs left on it.
                actions: assign(({ context, event }) => ({
                  blackboard: { ...(event.output ?? {}), ...context.inputs },
                })),
              },
            ],
            onError: {
              target: "failing",
              actions: assign(({ event }) => ({
                failure: {
                  code: codeOf(event.error) ?? "unavailable",
                  message: `the blackboard could not be read: ${messageOf(event.error)}`,
                },
              })),
            },
          },
        },
        preflight: {
          entry: enqueueActions(({ context, enqueue }) => {
            const checked = checkConstraints(prepared.constraints, context.blackboard);
            const line = (item: (typeof checked.failed)[number]) => ({
              variable: item.constraint.variable,
              operator: item.constraint.operator,
              message: item.message,
            });
            const failures = checked.failed.map(line);
            const warnings = checked.warnings.map(line);
            const stageWarnings = warnings.map((warning) => ({
              stage: "recipe" as const,
              code: "constraint",
              message: warning.message,
              subject: warning.variable,
            }));
            enqueue.assign({
              preflight: { failed: failures },
              warnings: [...context.warnings, ...stageWarnings],
              constraint_warned: warnedIndexes(prepared, checked.warnings),
            });
            enqueue({
              type: "record",
              params: { kind: "PREFLIGHT_CHECKED", payload: { passed: failures.length === 0, failures, warnings } },
            });
            for (const warning of stageWarnings as TurnWarning[])
              enqueue({ type: "record", params: { kind: "STAGE_WARNING", payload: warning } });
          }),
          always: [
            {
              guard: ({ context }) => (context.preflight?.failed.length ?? 0) > 0,
              target: "failing",
              actions: assign(({ context }) => ({
                failure: {
                  code: "preflight_failed",
                  message: context.preflight!.failed.map((failure) => failure.message).join("; "),
                },
              })),
            },
            { target: "run" },
          ],
        },
        run: {
          initial: stateKey(prepared.entry),
          ...(timeout !== undefined
            ? {
                after: {
                  runDeadline: {
                    target: "failing",
                    actions: assign(() => ({
                      failure: {
                        code: "timeout",
                        message: `the run passed its deadline (policy timeout_seconds: ${timeout})`,
                      },
                    })),
                  },
                },
              }
            : {}),
          states,
        },
        suspending: {
          invoke: {
            ...persist(false),
            // The checkpoint in the log is what a resumed run reads: a store that failed here loses nothing.
            onDone: "suspended",
            onError: "suspended",
          },
        },
        suspended: {
          type: "final",
          entry: [
            "closeOpenStreams",
            {
              type: "record",
              params: ({ context }) => ({ kind: "TURN_SUSPENDED", payload: { node: context.suspended_at ?? "" } }),
            },
          ],
        },
        finishing: {
          invoke: {
            ...persist(true),
            onDone: "completed",
            onError: {
              target: "completed",
              actions: assign(({ event }) => ({
                failure: { code: codeOf(event.error) ?? "invalid_output", message: messageOf(event.error) },
              })),
            },
          },
        },
        failing: {
          invoke: {
            ...persist(false),
            onDone: "completed",
            onError: "completed",
          },
        },
        completed: {
          type: "final",
          entry: [
            "closeOpenStreams",
            {
              type: "record",
              params: ({ context }): TurnRecord => ({
                kind: "TURN_COMPLETED",
                payload: {
                  response: responseOf(context),
                  outcome: outcomeOf(context),
                  usage: usageSummary(context.usage),
                  output: context.blackboard,
                },
              }),
            },
          ],
        },
      },
      output: ({ context }): RecipeRunOutput => {
        const suspended = context.suspended_at !== null && context.failure === null && context.cancelled === null;
        const node =
          suspended && !context.waiting ? (byId.get(context.suspended_at!) as HumanNode | undefined) : undefined;
        return {
          session_id: context.session_id,
          turn_id: context.turn_id,
          blackboard: context.blackboard,
          response: suspended ? "" : responseOf(context),
          ...(suspended && context.waiting
            ? { suspended: { node: context.suspended_at!, ...context.waiting } }
            : node
              ? {
                  suspended: {
                    node: node.id,
                    prompt: node.prompt,
                    ...(node.required_role ? { required_role: node.required_role } : {}),
                  },
                }
              : { outcome: outcomeOf(context) }),
        };
      },
    })
    .provide({
      // A host passes what is left of the deadline; a run started without it has the policy's whole timeout.
      delays: { runDeadline: ({ context }) => context.deadline_in_ms ?? (timeout ?? 0) * 1000 },
    });
}

/** Why the run's inputs may not be written to the blackboard (the recipe's state refuses one); null when they may. */
function inputsProblem(recipe: Recipe, inputs: Record<string, unknown>): string | null {
  for (const name of Object.keys(inputs)) {
    const problem = stateWriteProblem(recipe, inputs, name);
    if (problem !== null) return `input '${name}': ${problem}`;
  }
  return null;
}

/** Saves the blackboard (checking it against interface.outputs at the run's end), then goes on. */
const persist = (checkOutputs: boolean) => ({
  src: "persist" as const,
  input: ({ context }: Args) => ({
    session_id: context.session_id,
    turn_id: context.turn_id,
    blackboard: context.blackboard,
    checkOutputs,
  }),
});

/**
 * A fork's state: a region per branch, each a chain of node states ending in
 * a final state. Parallel mode runs the regions at once; sequential mode one
 * after another. Either way the run goes on at the join once all are done.
 */
function forkState(recipe: Recipe, byId: Map<string, RecipeNode>, shape: GraphShape, headId: string): StateConfig {
  const fork = shape.forks.get(headId)!;
  const key = stateKey(headId);
  const region = (chain: string[], index: number): StateConfig => {
    const doneId = `fork-${key}-${index}-done`;
    const exits: Exits = {
      to: (target) => (target === null || target === fork.join ? `#${doneId}` : `#node-${stateKey(target)}`),
      failing: "#recipe.failing",
      suspending: "#recipe.suspending",
      checkpoint: false,
    };
    const states: Record<string, StateConfig> = {};
    for (const id of chain) states[stateKey(id)] = nodeState(recipe, byId.get(id)!, exits, null);
    states.done = { id: doneId, type: "final" };
    return { initial: chain.length > 0 ? stateKey(chain[0]!) : "done", states };
  };
  const join = {
    target: fork.join === null ? "#recipe.finishing" : `#node-${stateKey(fork.join)}`,
    actions: [
      {
        type: "record",
        params: {
          kind: "ROUTE_TAKEN",
          payload: { from: headId, to: fork.join ?? "end", reason: "every branch is done" },
        },
      },
    ],
  };
  const regions = fork.branches.map(region);
  if (recipe.policy.execution_mode === "parallel") {
    return {
      id: `fork-${key}`,
      type: "parallel",
      states: Object.fromEntries(regions.map((config, index) => [`branch_${index}`, config])),
      onDone: join,
    };
  }
  const states: Record<string, StateConfig> = {};
  regions.forEach((config, index) => {
    states[`branch_${index}`] = { ...config, onDone: index + 1 < regions.length ? `branch_${index + 1}` : "joined" };
  });
  states.joined = { type: "final" };
  return { id: `fork-${key}`, initial: "branch_0", states, onDone: join };
}

/**
 * policy.human_in_the_loop: after each agent node, an approval (a human
 * node) that the run suspends at, the same way as at any human node.
 */
function withApprovals(recipe: Recipe): Recipe {
  if (!recipe.policy.human_in_the_loop) return recipe;
  const nodes: RecipeNode[] = [];
  for (const node of recipe.nodes) {
    if (node.kind !== "agent") {
      nodes.push(node);
      continue;
    }
    const approval: HumanNode = {
      kind: "human",
      id: `${node.id}_approval`,
      at: `${node.at} (policy.human_in_the_loop)`,
      prompt: `Approve the result of '${node.id}' (on the blackboard as '${node.output_key}')?`,
      output_key: `${node.id}_approval`,
      approval: true,
      next: node.next,
    };
    nodes.push({ ...node, next: [{ target: approval.id, label: "approval" }] }, approval);
  }
  return { ...recipe, nodes };
}

function outcomeOf(context: RecipeContext): TurnOutcome {
  if (context.cancelled !== null) return { status: "Cancelled", reason: context.cancelled };
  if (context.failure !== null) return { status: "Failed", error: context.failure };
  return turnOutcome(context.warnings);
}

const responseOf = (context: RecipeContext): string =>
  context.cancelled !== null || context.failure !== null ? "" : JSON.stringify(context.blackboard);

/** A compiled recipe machine. */
export type RecipeMachine = ReturnType<typeof compileRecipe>;
