import { describe, expect, it } from "vitest";
import { createActor, waitFor } from "xstate";
import { sessionMachine } from "../../machines/session.ts";
import type { TurnOutput } from "../../src/contracts/turnProtocol.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";
import { provideTurn } from "../../src/runtime/turnServices/provideTurn.ts";

function startSession() {
  const finished: TurnOutput[] = [];
  const machine = sessionMachine.provide({
    actors: { turn: provideTurn(localTurnServices(), () => {}) },
    actions: { turnFinished: (_, output) => finished.push(output) },
  });
  const actor = createActor(machine, { input: { session_id: "late", last_turn_id: 4, turns_completed: 4 } });
  actor.start();
  return { actor, finished };
}

describe("a session's turns reaching it out of turn order", () => {
  it("runs an earlier turn that arrives after a later one finished (a takeover, or WAL entries stored out of order)", async () => {
    const { actor, finished } = startSession();
    actor.send({ type: "turn.enqueue", turn: { turn_id: 6, text: "the later one" } });
    await waitFor(actor, (snapshot) => snapshot.context.turns_completed === 5, { timeout: 10_000 });
    actor.send({ type: "turn.enqueue", turn: { turn_id: 5, text: "the earlier one" } });
    await waitFor(actor, (snapshot) => snapshot.context.turns_completed === 6, { timeout: 10_000 });
    expect(finished.map((output) => output.turn_id)).toEqual([6, 5]);
    expect(actor.getSnapshot().context.last_turn_id).toBe(6);
  });

  it("never runs a turn it already finished, when it is delivered again", async () => {
    const { actor, finished } = startSession();
    actor.send({ type: "turn.enqueue", turn: { turn_id: 5, text: "once" } });
    await waitFor(actor, (snapshot) => snapshot.context.turns_completed === 5, { timeout: 10_000 });
    actor.send({ type: "turn.enqueue", turn: { turn_id: 5, text: "once" } });
    expect(actor.getSnapshot().value).toBe("idle");
    expect(actor.getSnapshot().context.queue).toEqual([]);
    expect(finished.map((output) => output.turn_id)).toEqual([5]);
  });
});
