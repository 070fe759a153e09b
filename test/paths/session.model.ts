import { type AnyEventObject, type AnyMachineSnapshot, createActor } from "xstate";
import { type SessionContext, type SessionEvent, sessionMachine } from "../../machines/session.ts";
import { defaultTurnPolicy, type TurnInput } from "../../machines/turn/index.ts";
import type { TurnEvent, TurnOutput, TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { localTurnServices } from "../../src/runtime/localTurnServices.ts";
import { provideTurn } from "../../src/runtime/provideTurn.ts";
import type { TurnServices } from "../../src/runtime/turnServices.ts";
import { childInput, Gates, ManualClock, type Model, type Oracle, Recorder, SteeredFault } from "./harness.ts";
import { type MachineUnderTest, NOW } from "./machines.model.ts";

/** The session under model-based test: it invokes the real turn, held at memory retrieval until a path lets it finish. */
// ---------------------------------------------------------------------------
// session

/** What the user says in turns 1, 2 and 3. */
const TEXTS = ["I'm stressed about my deadline", "Do you ever feel lonely?", "thanks, that helps"];
export function sessionUnderTest(oracle: Oracle, maxTurns: number): MachineUnderTest {
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
      provideTurn(
        localTurnServices(() => NOW),
        () => {},
      ),
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
        turn: provideTurn(
          localTurnServices(() => NOW),
          () => {},
        ),
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
      // A turn told to stop ends at once: the session hears of it before anything else.
      if (interrupted.get(snapshot)) {
        const output = turnOutput(snapshot);
        if (output) samples.push({ type: "xstate.done.actor.turn", output });
        return samples;
      }
      const known = Math.max(c.last_turn_id, c.current?.turn_id ?? 0, ...c.queue.map((turn) => turn.turn_id));
      if (known < maxTurns) samples.push({ type: "turn.enqueue", turn: { turn_id: known + 1, text: TEXTS[known]! } });
      // A cancellation of a turn this session has not seen changes nothing (the runner remembers it for later).
      samples.push({ type: "turn.cancel", turn_id: maxTurns + 1, reason: "steered cancel" });
      // A turn delivered twice (a redelivery while it runs) is not queued again.
      if (snapshot.matches("running") && c.queue.length === 0 && c.current) {
        samples.push({ type: "turn.enqueue", turn: c.current });
      }
      if (snapshot.matches("running") && c.current) {
        samples.push({ type: "turn.interrupt", by_turn_id: c.current.turn_id + 1 });
        // An interrupt from an older turn is ignored.
        samples.push({ type: "turn.interrupt", by_turn_id: c.current.turn_id });
        samples.push({ type: "turn.cancel", turn_id: c.current.turn_id, reason: "steered cancel" });
        const output = turnOutput(snapshot);
        if (output) samples.push({ type: "xstate.done.actor.turn", output });
        samples.push({ type: "xstate.error.actor.turn", error: new SteeredFault("turn") });
      }
      return samples;
    },
  };
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
    const services = heldAtRetrieval(
      localTurnServices(() => NOW),
      gates,
    );
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
    name: `session (${maxTurns} turns)`,
    model,
    start: () => {
      const gates = new Gates();
      const clock = new ManualClock();
      const recorder = new Recorder();
      const turnRecords = new Map<number, TurnRecord[]>();
      let crash: number | undefined;
      const machine = sessionMachine.provide({
        actors: {
          turn: provideTurn(
            heldAtRetrieval(
              localTurnServices(() => NOW),
              gates,
            ),
            (turn, record) => {
              // A host whose event log throws crashes the turn actor: the one way a turn fails.
              if (turn.turn_id === crash) throw new SteeredFault(`record (turn ${turn.turn_id})`);
              turnRecords.set(turn.turn_id, [...(turnRecords.get(turn.turn_id) ?? []), record]);
            },
          ),
        },
        actions: {
          turnFinished: (_, output) => recorder.emit({ finished: output }),
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
          if (event.type === "xstate.done.actor.turn" || event.type === "xstate.error.actor.turn") {
            if (event.type === "xstate.error.actor.turn") crash = current;
            return (await gates.release(`retrieveMemory:${current}`, "real"))
              ? undefined
              : `turn ${current} is not waiting (pending: ${gates.pendingChannels().join(", ") || "none"})`;
          }
          actor.send(event as SessionEvent);
          return undefined;
        },
        sameEvent: (expected, actual) => {
          // The turn queued, the interrupt's turn, or which turn finished (its reply depends on the
          // session's memory of earlier turns, which the samples, computed turn by turn, do not share).
          const pick = (event: AnyEventObject) =>
            JSON.stringify(
              event.turn ??
                event.by_turn_id ??
                (event.type === "turn.cancel" ? `cancel ${event.turn_id}` : null) ??
                (event.output as TurnOutput | undefined)?.turn_id ??
                null,
            );
          return pick(expected) === pick(actual) ? undefined : `got ${pick(actual)}, the path has ${pick(expected)}`;
        },
        check: (step) => {
          const finishedTurn = before?.current?.turn_id;
          const hooks = step.emitted as ({ finished: TurnOutput } | { crashed: number })[];
          before = context(step.snapshot);
          if (step.event.type === "xstate.done.actor.turn") {
            const records = turnRecords.get(finishedTurn!) ?? [];
            const finished = hooks.filter((hook) => "finished" in hook);
            if (finished.length !== 1 || finished[0]!.finished.turn_id !== finishedTurn)
              return `turnFinished ${JSON.stringify(hooks)} for turn ${finishedTurn}`;
            if (records.at(-1)?.kind !== "TURN_COMPLETED")
              return `turn ${finishedTurn} did not end with TURN_COMPLETED`;
            if (hooks.length !== 1) return `hooks ${JSON.stringify(hooks)}`;
            return undefined;
          }
          if (step.event.type === "xstate.error.actor.turn") {
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

/** The real turn services, with memory retrieval held until the replay releases the turn (`retrieveMemory:<turn>`). */
function heldAtRetrieval(services: TurnServices, gates: Gates): TurnServices {
  return {
    ...services,
    retrieveMemory: (request, abort) =>
      gates.hold(`retrieveMemory:${request.turn_id}`, request, () => services.retrieveMemory(request, abort), abort),
  };
}
