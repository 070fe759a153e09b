import { type Actor, createActor, fromCallback, type InspectionEvent, type Observer } from "xstate";
import { compileRecipe, type RecipeMachine } from "../../../machines/recipe/index.ts";
import type { RecipeStart, RecipeTurnEvent, RecipeTurnInput } from "../../../machines/session.ts";
import { type RemoteAgents, remoteAgents } from "../../a2a/remoteAgents.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import type { JsonObject } from "../../contracts/recipeRun.ts";
import type { TurnOutcome } from "../../contracts/turn.ts";
import { type TurnRecord, usageSummary } from "../../contracts/turnProtocol.ts";
import { isConclaveError, messageOf, singleLine } from "../../errors.ts";
import { loadRecipe } from "../../recipes/load.ts";
import type { HumanNode, Recipe } from "../../recipes/recipe.ts";
import { ToolPolicy } from "../../tools/policy.ts";
import {
  type ApprovalListeners,
  delegatedRequest,
  type RecipeMachineDeps,
  recipeImplementations,
} from "./recipeActors.ts";
import { recipeStartedPayload, recordedMemoryOf } from "./recipeStart.ts";
import { NO_RUN_MEMORY, type RunMemory, runMemory } from "./runMemory.ts";
import { screenInputs } from "./screenInputs.ts";

/** Compiled machines by document, so a recipe run many times is compiled once per runner. */
const COMPILED_KEPT = 64;

/** Where the turn's log is written: the writer's append (returns the stored event, with its seq). */
export type RecordTurn = (turn: { session_id: string; turn_id: number }, record: TurnRecord) => EngineEvent | undefined;

/** How a suspension was recorded: the seq of its TURN_SUSPENDED and when its human node times out. */
interface Suspension {
  seq: number;
  expires_at?: number;
}

/**
 * The `recipeTurn` actor a session invokes for a recipe turn: loads and
 * checks the document, compiles it (cached), records how the run starts,
 * and runs the recipe's machine as an actor of its own (visible to the
 * inspector) until it completes or suspends. Cancellations and interrupts
 * the session forwards go to the machine. It never throws: every failure
 * is reported to the session as `recipe.crashed` (or a Failed run).
 */
export function recipeTurnLogic(
  host: RecipeMachineDeps & {
    record: RecordTurn;
    /** Resolves once everything recorded of the turn so far is stored. Default: at once (nothing is buffered). */
    flush?: (turn: { session_id: string; turn_id: number }) => Promise<void>;
    inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  },
) {
  const compiled = new Map<string, { recipe: Recipe; machine: RecipeMachine }>();
  const compile = (document: JsonObject) => {
    const key = JSON.stringify(document);
    let entry = compiled.get(key);
    if (!entry) {
      const recipe = loadRecipe(document, { logicHandlers: Object.keys(host.logicHandlers) });
      entry = { recipe, machine: compileRecipe(recipe) };
      compiled.set(key, entry);
      if (compiled.size > COMPILED_KEPT) compiled.delete(compiled.keys().next().value as string);
    }
    return entry;
  };

  return fromCallback<
    { type: "turn.cancel"; reason: string } | { type: "turn.interrupt"; by_turn_id: number },
    RecipeTurnInput,
    RecipeTurnEvent
  >(({ input, sendBack, receive }) => {
    const turn = { session_id: input.session_id, turn_id: input.turn_id };
    const record = (body: TurnRecord) => host.record(turn, body);
    let recipe: Recipe;
    let machine: RecipeMachine;
    try {
      ({ recipe, machine } = compile(input.recipe.document));
    } catch (error) {
      // The intake checked it; a runner of another version (or registered handlers) may still refuse it.
      const message = singleLine(messageOf(error), 2_000);
      const outcome = { status: "Failed" as const, error: { code: recipeCodeOf(error), message } };
      try {
        if (!input.recipe.started) record({ kind: "TURN_STARTED", payload: startedPayload(input) });
        record({ kind: "TURN_COMPLETED", payload: { response: "", outcome, usage: usageSummary({}) } });
        sendBack({ type: "recipe.finished", output: { ...turn, blackboard: {}, response: "", outcome } });
      } catch (recordFailed) {
        sendBack({ type: "recipe.crashed", error: recordFailed });
      }
      return () => {};
    }
    const start = input.recipe;
    let actor: Actor<RecipeMachine> | null = null;
    let stopped = false;
    /** Ends every agent call of the run, whatever ends it (a crashed machine does not stop its children). */
    const calls = new AbortController();
    /** Agent calls waiting to learn that one of their tool calls needs approval (the node then suspends the run). */
    const approvals: ApprovalListeners = new Map();
    /** Cancellations and interrupts that came before the machine started: it gets them as soon as it starts. */
    const early: Parameters<Parameters<typeof receive>[0]>[0][] = [];
    /** The session's memory in the run: set once its inputs are screened. */
    let memory: RunMemory = NO_RUN_MEMORY;
    /** The run's remote A2A agents: each card is fetched once in the run. */
    const remote = remoteAgents(recipe.remote_agents ?? {});
    receive((event) => {
      if (actor) actor.send(event);
      else early.push(event);
    });
    const finish = (outcome: TurnOutcome) => {
      record({ kind: "TURN_COMPLETED", payload: { response: "", outcome, usage: usageSummary({}) } });
      sendBack({ type: "recipe.finished", output: { ...turn, blackboard: {}, response: "", outcome } });
    };
    const begin = async () => {
      let inputs = start.inputs;
      let deadlineAt = start.deadline_at;
      if (!start.started) {
        record({ kind: "TURN_STARTED", payload: startedPayload(input) });
        // The request interceptors see the inputs before any agent does, as they see a pipeline turn's message.
        const screened = await screenInputs(host.services, turn, inputs);
        for (const interception of screened.interceptions)
          record({ kind: "REQUEST_INTERCEPTED", payload: interception });
        if (stopped) return;
        if (screened.blocked)
          return finish({
            status: "Failed",
            error: { code: "blocked", message: "the request interceptors refused the run's inputs" },
          });
        inputs = screened.inputs;
        if (recipe.policy.timeout_seconds !== undefined) deadlineAt = Date.now() + recipe.policy.timeout_seconds * 1000;
        record({
          kind: "RECIPE_STARTED",
          payload: recipeStartedPayload(recipe, {
            document: start.document,
            inputs,
            deadlineAt,
            dryRun: start.dry_run === true,
          }),
        });
      }
      // A new answer is recorded once: one recorded before a takeover is in the log already.
      if (start.resume?.answer && start.new_answer)
        record({ kind: "HUMAN_INPUT_RECEIVED", payload: start.resume.answer });
      // Retrieved once per run: a run going on from its log takes what its log holds.
      memory = runMemory({
        services: host.services,
        recipe,
        turn,
        inputs,
        recorded: recordedMemoryOf(start),
        record,
        signal: calls.signal,
        dryRun: start.dry_run === true,
      });
      actor = startRun(inputs, deadlineAt);
    };
    const startRun = (inputs: JsonObject, deadlineAt: number | undefined) => {
      let expiresAt: number | undefined;
      let suspension: Suspension | undefined;
      const provided = machine.provide({
        ...recipeImplementations(host, recipe, calls.signal, approvals, memory, remote),
        actions: {
          // The clock-derived fields are the host's: when a human node expires, what is left of the deadline.
          record: ({ context }, body) => {
            let enriched = body;
            if (body.kind === "HUMAN_INPUT_REQUESTED") {
              const node = recipe.nodes.find((candidate) => candidate.id === body.payload.node) as
                | HumanNode
                | undefined;
              expiresAt = node?.timeout_seconds !== undefined ? Date.now() + node.timeout_seconds * 1000 : undefined;
              if (expiresAt !== undefined) enriched = { ...body, payload: { ...body.payload, expires_at: expiresAt } };
            } else if (body.kind === "TURN_SUSPENDED") {
              enriched = {
                ...body,
                payload: {
                  ...body.payload,
                  ...(expiresAt !== undefined ? { expires_at: expiresAt } : {}),
                  ...(deadlineAt !== undefined ? { remaining_ms: Math.max(0, deadlineAt - Date.now()) } : {}),
                },
              };
            }
            const stored = host.record(context, enriched);
            memory.begun();
            // The run has ended (or waits for a person): a memory reply that comes later is not recorded after it.
            if (enriched.kind === "TURN_COMPLETED" || enriched.kind === "TURN_SUSPENDED") memory.end();
            if (enriched.kind === "TURN_SUSPENDED" && stored)
              suspension = { seq: stored.seq, ...(expiresAt !== undefined ? { expires_at: expiresAt } : {}) };
          },
        },
      });
      const run = createActor(provided, {
        input: {
          ...turn,
          inputs,
          ...(start.resume ? { resume: start.resume } : {}),
          ...(deadlineAt !== undefined ? { deadline_in_ms: Math.max(0, deadlineAt - Date.now()) } : {}),
          ...(input.cancelled !== undefined ? { cancelled: input.cancelled } : {}),
        },
        ...(host.inspect ? { inspect: host.inspect } : {}),
      });
      run.subscribe({
        complete: () => {
          // Stopped from outside (the session went away): not an end of the run.
          if (stopped || run.getSnapshot().status !== "done") return;
          const output = run.getSnapshot().output!;
          const suspended = output.suspended && suspension ? { ...output.suspended, ...suspension } : output.suspended;
          sendBack({ type: "recipe.finished", output: suspended ? { ...output, suspended } : output });
        },
        error: (error) => {
          calls.abort();
          sendBack({ type: "recipe.crashed", error });
        },
      });
      run.start();
      for (const event of early.splice(0)) run.send(event);
      return run;
    };
    const closeTools = openTools(host, recipe, turn, start, {
      record,
      flushed: () => host.flush?.(turn) ?? Promise.resolve(),
      signal: calls.signal,
      approvals,
      memory: () => memory,
      remote,
    });
    begin().catch((error: unknown) => sendBack({ type: "recipe.crashed", error }));
    return () => {
      stopped = true;
      memory.end();
      calls.abort();
      actor?.stop();
      closeTools();
    };
  });
}

/**
 * Lets the run's agents call the tools its nodes offer, through the runner's
 * gate: the runner's and the recipe's policies, arguments screened by the
 * request interceptors before the log keeps them, and the calls an earlier
 * attempt finished answered from its log. Returns what closes it.
 */
function openTools(
  host: RecipeMachineDeps,
  recipe: Recipe,
  turn: { session_id: string; turn_id: number },
  start: RecipeStart,
  run: {
    record: (body: TurnRecord) => void;
    flushed: () => Promise<void>;
    signal: AbortSignal;
    approvals: ApprovalListeners;
    /** The run's memory (delegated agents are given it too). */
    memory: () => RunMemory;
    /** The run's remote A2A agents: a delegation to one asks it over A2A. */
    remote: RemoteAgents;
  },
): () => void {
  const allowed = new Set(recipe.nodes.flatMap((node) => (node.kind === "agent" ? (node.tools ?? []) : [])));
  const delegates = [...new Set(recipe.nodes.flatMap((node) => (node.kind === "agent" ? (node.delegates ?? []) : [])))];
  const tools = host.tools;
  if ((allowed.size === 0 && delegates.length === 0) || !tools) return () => {};
  return tools.gate.openTurn(turn.session_id, turn.turn_id, {
    policies: [
      tools.policy,
      recipe.policy.tools,
      start.dry_run ? ToolPolicy.parse({ dry_run: true }) : undefined,
    ].filter((policy) => policy !== undefined),
    delegates: new Set(delegates),
    ...(start.delegations ? { delegated: start.delegations } : {}),
    // A delegated agent answers as a node's agent does, one level deeper, with the same agents to delegate to.
    delegateTo: async ({ to, message, depth, callKey }) =>
      run.remote.has(to)
        ? run.remote.reply(to, message, run.signal)
        : host.services.callAgent(
            {
              ...delegatedRequest(turn, to, message, host.nodeTimeoutMs, await run.memory().context(), recipe.skills),
              tool_subject: tools.gate.subject,
              call_key: callKey,
              delegation_depth: depth,
              delegates,
            },
            run.signal,
          ),
    allowed,
    ...(recipe.tool_risks ? { risks: recipe.tool_risks } : {}),
    record: run.record,
    screenArgs: async (args) => (await screenInputs(host.services, turn, { args: args as JsonObject })).inputs.args,
    ...(start.finished_tool_calls ? { finished: start.finished_tool_calls } : {}),
    ...(start.model_steps ? { modelSteps: start.model_steps } : {}),
    ...(start.tool_approvals ? { approvals: start.tool_approvals } : {}),
    flushed: run.flushed,
    signal: run.signal,
    askApproval: (callKey, request) => {
      const listener = run.approvals.get(callKey);
      listener?.(request);
      return listener !== undefined;
    },
    ...(tools.timeoutMs !== undefined ? { timeoutMs: tools.timeoutMs } : {}),
  });
}

const startedPayload = (input: RecipeTurnInput) => ({
  user_input: input.text,
  turn_id: input.turn_id,
  ...(input.user_id ? { user_id: input.user_id } : {}),
});

/** A recipe turn's failure code: a ConclaveError's own, else `invalid_recipe` (a foreign error's code is not a recipe's). */
const recipeCodeOf = (error: unknown): string => (isConclaveError(error) ? error.code : "invalid_recipe");
