import { describe, expect, it } from "vitest";
import { createActor, waitFor } from "xstate";
import { sessionMachine } from "../../machines/session.ts";
import type { TurnOutput, TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";
import { provideTurn } from "../../src/runtime/turnServices/provideTurn.ts";

function startSession(delayMs = 0) {
  const records: { turn_id: number; record: TurnRecord }[] = [];
  const finished: TurnOutput[] = [];
  const services = localTurnServices();
  const slowDecide: typeof services.decide = async (request, signal) => {
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    return services.decide(request, signal);
  };
  const machine = sessionMachine.provide({
    actors: {
      turn: provideTurn({ ...services, decide: slowDecide }, (context, record) =>
        records.push({ turn_id: context.turn_id, record }),
      ),
    },
    actions: { turnFinished: (_, output) => finished.push(output) },
  });
  const actor = createActor(machine, { input: { session_id: "sess" } });
  actor.start();
  return { actor, records, finished };
}

describe("session machine", () => {
  it("runs queued turns one at a time, in order", async () => {
    const { actor, records, finished } = startSession(20);
    actor.send({ type: "turn.enqueue", turn: { turn_id: 1, text: "first" } });
    actor.send({ type: "turn.enqueue", turn: { turn_id: 2, text: "second" } });
    actor.send({ type: "turn.enqueue", turn: { turn_id: 3, text: "third" } });
    expect(actor.getSnapshot().context.queue.map((turn) => turn.turn_id)).toEqual([2, 3]);
    await waitFor(actor, (snapshot) => snapshot.context.turns_completed === 3, { timeout: 10_000 });
    expect(finished.map((output) => output.turn_id)).toEqual([1, 2, 3]);
    // No interleaving: every event of turn 1 precedes every event of turn 2, and so on.
    const order = records.map((entry) => entry.turn_id);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(actor.getSnapshot().value).toBe("idle");
  });

  it("carries modulators and stance over to the next turn", async () => {
    const { actor, finished } = startSession();
    actor.send({
      type: "turn.enqueue",
      turn: { turn_id: 1, text: "I'm feeling really sad and anxious and overwhelmed" },
    });
    await waitFor(actor, (snapshot) => snapshot.context.turns_completed === 1);
    const after = actor.getSnapshot().context;
    expect(after.modulators).toEqual(finished[0]?.modulators);
    expect(after.modulators.arousal).toBeGreaterThan(0);
    expect(after.stance).toEqual(finished[0]?.stance);
  });
});
