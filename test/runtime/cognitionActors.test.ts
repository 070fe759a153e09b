/**
 * The scheduler, council, voice and critics as actors of a runner that hosts
 * them (`--cognition runner`): a turn records the same events, in the same
 * order, as with plain calls; a call's failure keeps its code; a cancelled
 * call stops its actor, whose work sees its signal abort.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnyActorRef, InspectionEvent } from "xstate";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { type CognitionBackend, offlineBackend } from "../../src/cognition/backend.ts";
import type { CouncilRequest } from "../../src/contracts/council.ts";
import { ConclaveError } from "../../src/errors.ts";
import { CooldownStore } from "../../src/runtime/cooldownStore.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startCognitionActors } from "../../src/runtime/turnServices/cognitionActors.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import type { WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { runLocalTurn } from "../helpers/turns.ts";

const nats = useNatsServer();
let worker: WorkerHandle;
let client: ConclaveClient;

beforeAll(async () => {
  // Agents and memory only: the runner under test answers the scheduler, council, voice and critics.
  worker = await startWorker({ nc: await nats.connect("worker"), agents: builtinAgents("*"), services: ["memory"] });
  client = await connect({ nc: await nats.connect("client") });
});

afterAll(async () => {
  await client?.close();
  await worker?.stop();
});

/** One turn's event kinds, in order, through a runner running its cognition as `calls`. */
async function turnKinds(calls: "actors" | "direct", session: string, text: string) {
  const runner = await Runner.start(await nats.connect("runner"), { hostCognition: true, cognitionCalls: calls });
  try {
    const turn = client.submit(session, text);
    const kinds: string[] = [];
    for await (const event of turn) if (!event.kind.startsWith("STREAM_")) kinds.push(event.kind);
    return { kinds, result: await turn.result };
  } finally {
    await runner.stop();
  }
}

describe("a runner's cognition actors", () => {
  it("record a turn's events as plain calls did: the same kinds in the same order, the same reply", async () => {
    const text = "I'm stressed about my deadline and my manager keeps adding work";
    const direct = await turnKinds("direct", "calls-direct", text);
    const actors = await turnKinds("actors", "calls-actors", text);
    expect(actors.kinds).toEqual(direct.kinds);
    for (const kind of ["SCHEDULE_PLANNED", "COUNCIL_DECISION_MADE", "CRITICS_UPDATED", "TURN_COMPLETED"])
      expect(actors.kinds, kind).toContain(kind);
    expect(actors.result.outcome.status).toBe("Complete");
    expect(actors.result.response).toBe(direct.result.response);
    expect(actors.result.response).toBe((await runLocalTurn(text)).output.response);
  });

  it("answer a failed council with its error, code kept, and stop a cancelled call's actor", async () => {
    class ModelDown extends ConclaveError<"unavailable"> {
      constructor() {
        super("unavailable", "the model is down");
      }
    }
    let aborted: unknown;
    const backend: CognitionBackend = {
      ...offlineBackend,
      decide: async (request, signal) => {
        if (request.turn_id === 1) throw new ModelDown();
        // Turn 2's decision never comes: it waits for its signal.
        return new Promise((_, reject) =>
          signal.addEventListener("abort", () => {
            aborted = signal.reason;
            reject(signal.reason);
          }),
        );
      },
    };
    const spawned: AnyActorRef[] = [];
    const actors = startCognitionActors({
      backend,
      cooldowns: await CooldownStore.open(await nats.connect("runner")),
      inspect: (event: InspectionEvent) => {
        if (event.type === "@xstate.actor") spawned.push(event.actorRef as AnyActorRef);
      },
    });
    // The stub decides from the turn id alone: the context is not read.
    const request = (turn: number): CouncilRequest => ({
      session_id: "s",
      turn_id: turn,
      context: {} as CouncilRequest["context"],
    });
    try {
      await expect(actors.decide(request(1), new AbortController().signal)).rejects.toMatchObject({
        code: "unavailable",
        message: "the model is down",
      });
      const cancel = new AbortController();
      const deciding = actors.decide(request(2), cancel.signal);
      cancel.abort(new Error("turn cancelled"));
      await expect(deciding).rejects.toThrow("turn cancelled");
      const council = spawned.filter((actor) => actor.id === "decide:2");
      expect(council).toHaveLength(1);
      expect(council[0]!.getSnapshot().status).toBe("stopped");
      expect(aborted).toBeDefined();
    } finally {
      actors.stop();
    }
    await expect(actors.decide(request(3), new AbortController().signal)).rejects.toThrow("stopped");
  });
});
