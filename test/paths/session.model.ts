import { type AnyEventObject, type AnyMachineSnapshot, createActor } from "xstate";
import {
  type QueuedTurn,
  type RecipeStart,
  type RecipeTurnInput,
  type SessionContext,
  type SessionEvent,
  sessionMachine,
} from "../../machines/session.ts";
import { defaultTurnPolicy, type TurnInput } from "../../machines/turn/index.ts";
import type { RecipeRunOutput } from "../../src/contracts/recipeProtocol.ts";
import type { TurnEvent, TurnOutput } from "../../src/contracts/turnProtocol.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";
import { provideTurn } from "../../src/runtime/turnServices/provideTurn.ts";
import type { TurnServices } from "../../src/runtime/turnServices/turnServices.ts";
import { childInput, Gates, ManualClock, type Model, type Oracle, Recorder, SteeredFault } from "./harness.ts";
import { type MachineUnderTest, NOW } from "./machines.model.ts";
import {
  APPROVAL_RECIPE,
  agentsHeld,
  DRAFT_RECIPE,
  recipeServices,
  recipeStart,
  recipeTurn,
  runRecipeTurn,
  TurnLog,
} from "./recipe.host.ts";

/**
 * The session under model-based test: it invokes the real turn, held at memory retrieval until a path
 * lets it finish, and for a recipe turn the real recipe host (`recipeTurnLogic`), held at its agent call.
 */
// ---------------------------------------------------------------------------
// session

/** A turn of the session: what the user says, or a recipe run. */
export interface SessionTurn {
  text: string;
  recipe?: RecipeStart;
}

/** What the user says in turns 1, 2 and 3. */
export const PIPELINE_TURNS: readonly SessionTurn[] = [
  { text: "I'm stressed about my deadline" },
  { text: "Do you ever feel lonely?" },
  { text: "thanks, that helps" },
];

/** A pipeline turn whose agent's tool call waits for a person's approval: the turn suspends. */
export const APPROVAL_TURN: SessionTurn = { text: "please approve the transfer" };

/** Recipe runs: one that ends (Complete), one that suspends at its human node. */
export const RECIPE_TURNS: readonly SessionTurn[] = [
  { text: "a draft on solar panels", recipe: recipeStart(DRAFT_RECIPE, "solar panels") },
  { text: "a draft for an editor", recipe: recipeStart(APPROVAL_RECIPE, "our new API") },
];

export function sessionUnderTest(oracle: Oracle, turns: readonly SessionTurn[], label?: string): MachineUnderTest {
  const maxTurns = turns.length;
  /** The recipe turns, by id. */
  const recipes = new Set(turns.flatMap((turn, index) => (turn.recipe ? [index + 1] : [])));
  const input = { session_id: "paths", policy: defaultTurnPolicy };
  /** Whether the traversed state was reached by an interrupt the session passed on to its turn. */
  const interrupted = new WeakMap<AnyMachineSnapshot, boolean>();
  /** Snapshots whose running turn was stopped by a cancellation (not an interrupt). */
  const cancelled = new WeakSet<AnyMachineSnapshot>();
  const context = (snapshot: AnyMachineSnapshot) => snapshot.context as SessionContext;
  const compare = (snapshot: AnyMachineSnapshot) => {
    const c = context(snapshot);
    return JSON.stringify([
      snapshot.value,
      c.queue.map((turn) => turn.turn_id),
      c.current?.turn_id ?? null,
      c.last_turn_id,
      c.turns_completed,
    ]);
  };
  const realTurn = (turnInput: TurnInput): Promise<TurnOutput> => {
    const actor = createActor(
      provideTurn(pipelineServices(), () => {}),
      { input: turnInput },
    );
    return new Promise((resolve, reject) => {
      actor.subscribe({ complete: () => resolve(actor.getSnapshot().output as TurnOutput), error: reject });
      actor.start();
    });
  };
  const model: Model = {
    machine: sessionMachine.provide({
      actors: {
        turn: provideTurn(pipelineServices(), () => {}),
        recipeTurn: recipeTurn(recipeServices(), () => undefined),
      },
    }),
    input,
    compare,
    key: (snapshot) => `${compare(snapshot)}${interrupted.get(snapshot) ? " interrupted" : ""}`,
    note: (snapshot, event, previous) => {
      if (interrupted.has(snapshot)) return;
      const current = previous ? context(previous).current?.turn_id : undefined;
      interrupted.set(
        snapshot,
        (event?.type === "turn.interrupt" && current !== undefined && current < (event.by_turn_id as number)) ||
          (event?.type === "turn.cancel" && current !== undefined && current === event.turn_id),
      );
      if (event?.type === "turn.cancel" && current === event.turn_id) cancelled.add(snapshot);
    },
    events: (snapshot) => {
      const c = context(snapshot);
      const samples: AnyEventObject[] = [];
      const recipe = snapshot.matches("runningRecipe");
      // A turn told to stop ends at once: the session hears of it before anything else.
      if (interrupted.get(snapshot)) {
        const end = recipe ? recipeEnd(snapshot) : turnEnd(snapshot);
        if (end) samples.push(end);
        return samples;
      }
      const known = Math.max(c.last_turn_id, c.current?.turn_id ?? 0, ...c.queue.map((turn) => turn.turn_id));
      if (known < maxTurns) samples.push({ type: "turn.enqueue", turn: queued(known + 1) });
      // A cancellation of a turn this session has not seen changes nothing (the runner remembers it for later).
      samples.push({ type: "turn.cancel", turn_id: maxTurns + 1, reason: "steered cancel" });
      const running = recipe || snapshot.matches("running");
      // A turn delivered twice (a redelivery while it runs) is not queued again.
      if (running && c.queue.length === 0 && c.current) {
        samples.push({ type: "turn.enqueue", turn: c.current });
      }
      if (running && c.current) {
        samples.push({ type: "turn.interrupt", by_turn_id: c.current.turn_id + 1 });
        // An interrupt from an older turn is ignored.
        samples.push({ type: "turn.interrupt", by_turn_id: c.current.turn_id });
        samples.push({ type: "turn.cancel", turn_id: c.current.turn_id, reason: "steered cancel" });
        const end = recipe ? recipeEnd(snapshot) : turnEnd(snapshot);
        if (end) samples.push(end);
        samples.push(
          recipe
            ? { type: "recipe.crashed", error: new SteeredFault("recipeTurn") }
            : { type: "xstate.error.actor.turn", error: new SteeredFault("turn") },
        );
      }
      return samples;
    },
  };
  /** Turn `turnId` as the runner queues it. */
  function queued(turnId: number): QueuedTurn {
    const turn = turns[turnId - 1]!;
    return { turn_id: turnId, text: turn.text, ...(turn.recipe ? { recipe: turn.recipe } : {}) };
  }
  /** How the current recipe turn ends: what the real host sends back (its run finished or suspended, or stopped). */
  function recipeEnd(snapshot: AnyMachineSnapshot): AnyEventObject | undefined {
    const recipeInput = childInput(snapshot, "turn") as RecipeTurnInput;
    const stopped = interrupted.get(snapshot) ? (cancelled.has(snapshot) ? "cancel" : "interrupt") : undefined;
    const outcome = oracle.lookup("recipeTurn", { recipeInput, stopped }, () =>
      runRecipeTurn(
        recipeInput,
        stopped === undefined
          ? undefined
          : stopped === "cancel"
            ? { type: "turn.cancel", reason: "steered cancel" }
            : { type: "turn.interrupt", by_turn_id: recipeInput.turn_id + 1 },
      ),
    );
    return outcome?.ok ? (outcome.value as AnyEventObject) : undefined;
  }
  function turnEnd(snapshot: AnyMachineSnapshot): AnyEventObject | undefined {
    const output = turnOutput(snapshot);
    return output ? { type: "xstate.done.actor.turn", output } : undefined;
  }
  function turnOutput(snapshot: AnyMachineSnapshot): unknown {
    const turnInput = childInput(snapshot, "turn") as TurnInput;
    const stopped = interrupted.get(snapshot) ? (cancelled.has(snapshot) ? "cancel" : "interrupt") : undefined;
    const outcome = oracle.lookup("turn", { turnInput, stopped }, () =>
      stopped === undefined
        ? realTurn(turnInput)
        : stoppedTurn(
            turnInput,
            stopped === "cancel"
              ? { type: "turn.cancel", reason: "steered cancel" }
              : { type: "turn.interrupt", by_turn_id: turnInput.turn_id + 1 },
          ),
    );
    return outcome?.ok ? outcome.value : undefined;
  }
  /** A real turn told to stop (interrupted or cancelled) as soon as it started (held where the replay holds it: memory retrieval). */
  const stoppedTurn = (turnInput: TurnInput, stop: TurnEvent): Promise<TurnOutput> => {
    const gates = new Gates();
    const services = heldAtRetrieval(pipelineServices(), gates);
    const actor = createActor(
      provideTurn(services, () => {}),
      { input: turnInput },
    );
    return new Promise((resolve, reject) => {
      actor.subscribe({ complete: () => resolve(actor.getSnapshot().output as TurnOutput), error: reject });
      actor.start();
      const interruptWhenHeld = () => {
        if (gates.pendingChannels().length > 0) actor.send(stop);
        else setImmediate(interruptWhenHeld);
      };
      interruptWhenHeld();
    });
  };
  return {
    name: `session (${label ?? `${maxTurns} turns`})`,
    model,
    start: () => {
      const gates = new Gates();
      const clock = new ManualClock();
      const recorder = new Recorder();
      const log = new TurnLog();
      let crash: number | undefined;
      const record = (turn: { session_id: string; turn_id: number }, body: Parameters<typeof log.append>[1]) => {
        // A host whose event log throws crashes the turn actor: the one way a turn fails. A recipe's machine
        // crashes once its node's agent has answered (a machine that crashes mid-call leaves the call running:
        // XState does not stop the children of an actor that errored, so the agent's parts go to a stopped actor).
        const crashes = turn.turn_id === crash && (!recipes.has(turn.turn_id) || body.kind === "NODE_COMPLETED");
        if (crashes) throw new SteeredFault(`record (turn ${turn.turn_id})`);
        return log.append(turn, body);
      };
      const machine = sessionMachine.provide({
        actors: {
          turn: provideTurn(heldAtRetrieval(pipelineServices(), gates), record),
          recipeTurn: recipeTurn(agentsHeld(recipeServices(), gates), record),
        },
        actions: {
          turnFinished: (_, output) => recorder.emit({ finished: output }),
          turnSuspended: (_, output) => recorder.emit({ suspended: output }),
          turnCrashed: (_, failure) => recorder.emit({ crashed: failure.turn_id }),
        },
      });
      const actor = createActor(machine, { input, clock, inspect: recorder.inspect });
      clock.attach(actor.system);
      let before: SessionContext | undefined;
      return {
        actor,
        recorder,
        drive: async (event, state) => {
          const current = context(state).current?.turn_id;
          const ends: Record<string, string> = {
            "xstate.done.actor.turn": "retrieveMemory",
            "xstate.error.actor.turn": "retrieveMemory",
            "recipe.finished": "callAgent",
            "recipe.crashed": "callAgent",
          };
          const held = ends[event.type];
          if (held) {
            const channel = `${held}:${current}`;
            if (!(await gates.waitFor(channel)))
              return `turn ${current} is not waiting (pending: ${gates.pendingChannels().join(", ") || "none"})`;
            if (event.type === "xstate.error.actor.turn" || event.type === "recipe.crashed") crash = current;
            await gates.release(channel, "real");
            return undefined;
          }
          // A turn is told what happens (an interrupt, a cancellation, a turn queued) where the replay holds it.
          if (current !== undefined)
            await gates.waitFor(`${state.matches("runningRecipe") ? "callAgent" : "retrieveMemory"}:${current}`);
          actor.send(event as SessionEvent);
          return undefined;
        },
        sameEvent: (expected, actual) => {
          // The turn queued, the interrupt's turn, or which turn finished (its reply depends on the
          // session's memory of earlier turns, which the samples, computed turn by turn, do not share;
          // so does a recipe's blackboard: how a recipe run ended is compared, not its blackboard).
          const pick = (event: AnyEventObject) => {
            if (event.type === "recipe.finished") {
              const output = event.output as RecipeRunOutput;
              return JSON.stringify([output.turn_id, output.outcome ?? null, output.suspended?.node ?? null]);
            }
            return JSON.stringify(
              event.turn ??
                event.by_turn_id ??
                (event.type === "turn.cancel" ? `cancel ${event.turn_id}` : null) ??
                (event.output as TurnOutput | undefined)?.turn_id ??
                null,
            );
          };
          return pick(expected) === pick(actual) ? undefined : `got ${pick(actual)}, the path has ${pick(expected)}`;
        },
        finish: async () => {
          // Not the contract, a workaround: recipeTurnLogic's `complete` observer reads the output of a run that
          // was stopped (the session stopped while the run is under way) and throws, uncaught. A path that ends
          // with a recipe run under way lets the run finish before the session actor is stopped.
          if (!actor.getSnapshot().matches("runningRecipe")) return undefined;
          gates.auto = () => "real";
          for (const channel of gates.pendingChannels()) await gates.release(channel, "real");
          const deadline = Date.now() + 1_000;
          while (actor.getSnapshot().matches("runningRecipe")) {
            if (Date.now() > deadline) return "the recipe run under way at the end of the path did not finish";
            await new Promise<void>((resolve) => setTimeout(resolve, 5));
          }
          return undefined;
        },
        check: (step) => {
          const finishedTurn = before?.current?.turn_id;
          const hooks = step.emitted as (
            | { finished: TurnOutput }
            | { suspended: RecipeRunOutput }
            | { crashed: number }
          )[];
          before = context(step.snapshot);
          if (step.event.type === "recipe.finished") {
            const output = step.event.output as RecipeRunOutput;
            const records = log.of(finishedTurn!);
            const last = records.at(-1);
            if (hooks.length !== 1) return `hooks ${JSON.stringify(hooks)}`;
            const hook = hooks[0]!;
            if (output.suspended) {
              // Suspended, not finished: the host is told so, and where its TURN_SUSPENDED is in the log.
              if (!("suspended" in hook) || hook.suspended.turn_id !== finishedTurn)
                return `turnSuspended ${JSON.stringify(hooks)} for turn ${finishedTurn}`;
              if (last?.kind !== "TURN_SUSPENDED") return `turn ${finishedTurn} did not end with TURN_SUSPENDED`;
              if (output.suspended.seq !== last.seq)
                return `suspended at seq ${output.suspended.seq}, TURN_SUSPENDED is seq ${last.seq}`;
              return undefined;
            }
            if (!("finished" in hook) || hook.finished.turn_id !== finishedTurn)
              return `turnFinished ${JSON.stringify(hooks)} for turn ${finishedTurn}`;
            if (last?.kind !== "TURN_COMPLETED") return `turn ${finishedTurn} did not end with TURN_COMPLETED`;
            if (JSON.stringify(hook.finished.outcome) !== JSON.stringify(last.payload.outcome))
              return `turnFinished outcome ${JSON.stringify(hook.finished.outcome)}, TURN_COMPLETED's ${JSON.stringify(last.payload.outcome)}`;
            return undefined;
          }
          if (step.event.type === "xstate.done.actor.turn" && (step.event.output as TurnOutput).suspended) {
            // Suspended for an approval, not finished: the host is told so, and the log ends with TURN_SUSPENDED.
            const records = log.of(finishedTurn!);
            const hook = hooks[0];
            if (hooks.length !== 1 || !hook || !("suspended" in hook) || hook.suspended.turn_id !== finishedTurn)
              return `turnSuspended ${JSON.stringify(hooks)} for turn ${finishedTurn}`;
            if (records.at(-1)?.kind !== "TURN_SUSPENDED")
              return `turn ${finishedTurn} did not end with TURN_SUSPENDED`;
            return undefined;
          }
          if (step.event.type === "xstate.done.actor.turn") {
            const records = log.of(finishedTurn!);
            const finished = hooks.filter((hook) => "finished" in hook);
            if (finished.length !== 1 || finished[0]!.finished.turn_id !== finishedTurn)
              return `turnFinished ${JSON.stringify(hooks)} for turn ${finishedTurn}`;
            if (records.at(-1)?.kind !== "TURN_COMPLETED")
              return `turn ${finishedTurn} did not end with TURN_COMPLETED`;
            if (hooks.length !== 1) return `hooks ${JSON.stringify(hooks)}`;
            return undefined;
          }
          if (step.event.type === "xstate.error.actor.turn" || step.event.type === "recipe.crashed") {
            if (JSON.stringify(hooks) !== JSON.stringify([{ crashed: finishedTurn }]))
              return `turnCrashed ${JSON.stringify(hooks)} for turn ${finishedTurn}`;
            crash = undefined;
            return undefined;
          }
          return hooks.length === 0 ? undefined : `unexpected hooks ${JSON.stringify(hooks)}`;
        },
      };
    },
  };
}

/**
 * The real turn services, where a message that asks to "approve" something has its first agent's
 * tool call wait for approval: the agent call tells the turn (`onApproval`), which suspends, and never answers.
 */
function pipelineServices(): TurnServices {
  const services = localTurnServices(() => NOW);
  return {
    ...services,
    callAgent: (request, signal, options) => {
      const onApproval = options?.onApproval;
      if (!onApproval || !/approve/.test(request.context.user_message) || request.mode !== "respond")
        return services.callAgent(request, signal, options);
      onApproval({
        approval: {
          call_id: `${request.agent_id}.w${request.wave}/0`,
          tool: "sandbox_write",
          args: {},
          reason: "critical",
        },
        prompt: "Approve sandbox_write({})? critical",
        required_role: "operator",
      });
      return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
    },
  };
}

/** The real turn services, with memory retrieval held until the replay releases the turn (`retrieveMemory:<turn>`). */
function heldAtRetrieval(services: TurnServices, gates: Gates): TurnServices {
  return {
    ...services,
    retrieveMemory: (request, abort) =>
      gates.hold(`retrieveMemory:${request.turn_id}`, request, () => services.retrieveMemory(request, abort), abort),
  };
}
