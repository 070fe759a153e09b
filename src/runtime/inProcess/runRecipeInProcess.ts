import { type Actor, createActor } from "xstate";
import { compileRecipe, type RecipeMachine } from "../../../machines/recipe/index.ts";
import type { AgentDefinition } from "../../agents/defineAgent.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import { describeIssues } from "../../contracts/issues.ts";
import type { ChatModel } from "../../contracts/model.ts";
import type { RecipeRunOutput } from "../../contracts/recipeProtocol.ts";
import type { JsonObject } from "../../contracts/recipeRun.ts";
import type { TurnOutcome } from "../../contracts/turn.ts";
import { type TurnRecord, usageSummary } from "../../contracts/turnProtocol.ts";
import { ConclaveError, messageOf, singleLine } from "../../errors.ts";
import { loadRecipe } from "../../recipes/load.ts";
import type { ToolDefinition } from "../../tools/defineTool.ts";
import { ToolPolicy, type ToolPolicyInput } from "../../tools/policy.ts";
import { checkRecipeSubmission } from "../intake/recipeSubmission.ts";
import { screeningInterceptor, storedRecordScreen } from "../interception/intercepted.ts";
import { defaultInterceptors, type InterceptorChains } from "../interception/interceptors.ts";
import { delegatedRequest, type LogicHandler, recipeImplementations } from "../recipeHost/recipeActors.ts";
import { recipeStartedPayload } from "../recipeHost/recipeStart.ts";
import { screenInputs } from "../recipeHost/screenInputs.ts";
import { localTurnServices } from "../turnServices/localTurnServices.ts";
import { composeTurnServices } from "../turnServices/turnInterceptor.ts";
import { inProcessAgentActor, inProcessCallAgent } from "./inProcessAgents.ts";
import { openInProcessTools } from "./inProcessTools.ts";
import { memoryBlackboardStores } from "./memoryBlackboard.ts";
import { MemoryEventLog } from "./memoryEventLog.ts";

/** How to run a recipe in this process (`runRecipeInProcess`). */
export interface InProcessOptions {
  /** The run's arguments (checked against the recipe's `interface.inputs`). Default `{}`. */
  inputs?: JsonObject;
  /** The agents the recipe's nodes may call, by their manifest id. A node calling another fails (`unknown_agent`). */
  agents: readonly AgentDefinition[];
  /** The tools agent nodes may be offered (those a node lists, at the stricter of their and the recipe's risk). */
  tools?: readonly ToolDefinition[];
  /** The host's tool policy (the recipe's `policy.tools` applies too; the stricter wins). Default: allow, with the defaults' limits. */
  toolPolicy?: ToolPolicyInput;
  /** Every write tool runs its dry run instead (forces the policy's `dry_run`). */
  dryRun?: boolean;
  /** Handlers of the workflow's `logic` steps, by step id. */
  logicHandlers?: Record<string, LogicHandler>;
  /** The model agents think with. Default: none (the deterministic offline mode). */
  model?: ChatModel;
  /** The session id the run's events carry (the blackboard starts empty either way). Default `local`. */
  sessionId?: string;
  /** Budget of the whole run in ms: past it the run ends, Cancelled. Default 120 000. */
  timeoutMs?: number;
  /** Each event of the run as it is recorded. */
  onEvent?: (event: EngineEvent) => void;
  /** The interceptor chains on the inputs, tool arguments, agents' streams and the stored log. Default: `defaultInterceptors()`. */
  interceptors?: InterceptorChains;
}

/** How an in-process run ended, with its whole event log (`seq` from 0). */
export type InProcessResult =
  | { status: "completed"; outcome: TurnOutcome; output: JsonObject; events: EngineEvent[] }
  /** Stopped at a human node (or `policy.human_in_the_loop`): an in-process run cannot be resumed. */
  | { status: "suspended"; node: string; prompt: string; events: EngineEvent[] };

/** The longest one agent call may take, as a runner's default (capped by the run's budget). */
const NODE_TIMEOUT_MS = 60_000;

/**
 * Runs a recipe document to its end in this process, without
 * NATS: the fallback engine for embedding and tests. The document is
 * loaded, checked and compiled as a runner does, and the same statechart
 * runs with the same event log (TURN_STARTED, RECIPE_STARTED, the nodes'
 * events, TURN_COMPLETED; `seq` from 0, turn 1). Agents run here through
 * `runAgent`; agent nodes' tool calls go through the same governance as on
 * a runner (policies, limits, parallel slots, the log) and run here with
 * `runTool`; delegations (`ctx.delegate`) to the agents a node lists in
 * `delegates` run here too. The default interceptors screen the inputs,
 * tool arguments and agents' streams. Blackboards are kept in memory, one
 * run only.
 *
 * What differs from a runner, by design: nothing is durable (no takeover,
 * no replay); a tool call that needs a person's approval (a `critical` or
 * `sensitive` tool, a policy's `approve`, a low confidence) is refused as
 * `approval_required`, since nobody can answer it here; and a run that
 * reaches a human node returns `suspended`, and cannot be resumed.
 *
 * Rejects (before anything runs) on a recipe that does not load or inputs
 * that do not match `interface.inputs` (code `invalid_recipe` or
 * `invalid_request`, naming each issue's path), or a tool policy that does
 * not parse (`config`). Otherwise it resolves: failures of the run are its
 * outcome (Failed).
 *
 * @example
 * ```ts
 * const result = await runRecipeInProcess(document, { agents: [writer], inputs: { topic: "tides" } });
 * if (result.status === "completed") console.log(result.outcome.status, result.output);
 * ```
 */
export async function runRecipeInProcess(document: JsonObject, options: InProcessOptions): Promise<InProcessResult> {
  const logicHandlers = options.logicHandlers ?? {};
  const inputs = options.inputs ?? {};
  await checkRecipeSubmission({ logicHandlers: Object.keys(logicHandlers) }, { document, inputs });
  const recipe = loadRecipe(document, { logicHandlers: Object.keys(logicHandlers) });
  const policy = hostPolicy(options);
  const timeoutMs = options.timeoutMs ?? 120_000;
  const nodeTimeoutMs = Math.min(NODE_TIMEOUT_MS, timeoutMs);
  const turn = { session_id: options.sessionId ?? "local", turn_id: 1 };
  const chains = options.interceptors ?? defaultInterceptors();
  const log = new MemoryEventLog(turn, storedRecordScreen(chains), options.onEvent);
  const record = (body: TurnRecord) => void log.append(body);
  /** Ends every agent and tool call of the run, whatever ends it. */
  const calls = new AbortController();

  const tools = openInProcessTools(recipe, {
    tools: options.tools ?? [],
    policies: [policy, recipe.policy.tools].filter((one) => one !== undefined),
    record,
    screenArgs: async (args) => (await screenInputs(services, turn, { args: args as JsonObject })).inputs.args,
    // A delegated agent answers as a node's agent does, one level deeper, with the same agents to delegate to.
    delegateTo: ({ to, message, depth, callKey }) =>
      services.callAgent(
        {
          ...delegatedRequest(turn, to, message, nodeTimeoutMs),
          call_key: callKey,
          delegation_depth: depth,
          delegates: tools?.delegates ?? [],
        },
        calls.signal,
      ),
    signal: calls.signal,
  });
  const services = composeTurnServices(
    {
      ...localTurnServices(Date.now, undefined, options.agents),
      callAgent: inProcessCallAgent(options.agents, { model: options.model, askGate: tools?.askGate }),
    },
    [screeningInterceptor(chains)],
  );

  let actor: Actor<RecipeMachine> | undefined;
  let timedOut: string | undefined;
  const timer = setTimeout(() => {
    timedOut = `the in-process run passed its ${timeoutMs} ms budget`;
    actor?.send({ type: "turn.cancel", reason: timedOut });
  }, timeoutMs);
  try {
    record({ kind: "TURN_STARTED", payload: { user_input: `run ${recipe.name}`, turn_id: turn.turn_id } });
    const screened = await screenInputs(services, turn, inputs);
    for (const interception of screened.interceptions) record({ kind: "REQUEST_INTERCEPTED", payload: interception });
    if (screened.blocked)
      return finished(log, {
        status: "Failed",
        error: { code: "blocked", message: "the request interceptors refused the run's inputs" },
      });
    const timeout = recipe.policy.timeout_seconds;
    const deadlineAt = timeout !== undefined ? Date.now() + timeout * 1000 : undefined;
    record({
      kind: "RECIPE_STARTED",
      payload: recipeStartedPayload(recipe, {
        document,
        inputs: screened.inputs,
        deadlineAt,
        dryRun: options.dryRun === true,
      }),
    });
    const host = {
      services,
      stores: memoryBlackboardStores(),
      logicHandlers,
      nodeTimeoutMs,
    };
    const implementations = recipeImplementations(host, recipe, calls.signal);
    const machine = compileRecipe(recipe).provide({
      actors: {
        ...implementations.actors,
        callAgent: inProcessAgentActor(recipe, {
          services,
          tools,
          nodeTimeoutMs,
          signal: calls.signal,
        }),
      },
      actions: { record: (_, body) => record(body) },
    });
    const run = createActor(machine, {
      input: {
        ...turn,
        inputs: screened.inputs,
        ...(deadlineAt !== undefined ? { deadline_in_ms: Math.max(0, deadlineAt - Date.now()) } : {}),
        ...(timedOut !== undefined ? { cancelled: timedOut } : {}),
      },
    });
    actor = run;
    let output: RecipeRunOutput;
    try {
      output = await new Promise<RecipeRunOutput>((resolve, reject) => {
        run.subscribe({ complete: () => resolve(run.getSnapshot().output!), error: reject });
        run.start();
      });
    } catch (error) {
      // The machine itself crashed (a bug, never a node's failure): the run ends Failed, as a runner ends it.
      return finished(log, {
        status: "Failed",
        error: { code: "internal", message: singleLine(messageOf(error), 2_000) },
      });
    }
    const events = log.events;
    if (output.suspended)
      return { status: "suspended", node: output.suspended.node, prompt: output.suspended.prompt, events };
    return { status: "completed", outcome: output.outcome!, output: output.blackboard, events };
  } finally {
    clearTimeout(timer);
    calls.abort();
    actor?.stop();
  }
}

/** The host's tool policy, `dry_run` forced when asked. */
function hostPolicy(options: InProcessOptions): ToolPolicy {
  const parsed = ToolPolicy.safeParse({ ...options.toolPolicy, ...(options.dryRun ? { dry_run: true } : {}) });
  if (parsed.success) return parsed.data;
  throw new ConclaveError("config", `toolPolicy is invalid: ${describeIssues(parsed.error, { join: "; " })}`);
}

/** Ends a run that never reached (or crashed out of) its machine: TURN_COMPLETED with this outcome. */
function finished(log: MemoryEventLog, outcome: TurnOutcome): InProcessResult {
  log.append({ kind: "TURN_COMPLETED", payload: { response: "", outcome, usage: usageSummary({}) } });
  return { status: "completed", outcome, output: {}, events: log.events };
}
