import { describe, expect, it } from "vitest";
import { createActor, fromPromise, toPromise } from "xstate";
import { councilMachine } from "../../machines/council.ts";
import { offlineBackend } from "../../src/cognition/backend.ts";
import { decide } from "../../src/cognition/council.ts";
import { runFastSensors } from "../../src/cognition/sensors.ts";
import { CouncilReply, type CouncilRequest } from "../../src/contracts/council.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";

const request: CouncilRequest = {
  session_id: "s1",
  turn_id: 3,
  context: {
    user_message: "I'm stuck on a bug, can you help?",
    sensors: runFastSensors("I'm stuck on a bug, can you help?"),
    modulators: neutralModulators(),
    stance: neutralStance(),
    claims: [],
    episodes: [],
    consensus: 1,
    proposals: [{ source: "reasoning.analyst", kind: "say", text: "What changed right before it broke?" }],
  },
};

function start(decideWith: (input: CouncilRequest) => Promise<CouncilReply>) {
  const actor = createActor(
    councilMachine.provide({ actors: { decide: fromPromise(({ input }) => decideWith(input)) } }),
    { input: request },
  );
  actor.start();
  return actor;
}

describe("council machine", () => {
  it("decides with the provided actor, given the request, and replies with its decision", async () => {
    const seen: CouncilRequest[] = [];
    const actor = start(async (input) => {
      seen.push(input);
      return offlineBackend.decide(input, new AbortController().signal);
    });
    const output = await toPromise(actor);
    expect(actor.getSnapshot().value).toBe("decided");
    expect(seen).toEqual([request]);
    expect(output).toEqual({ status: "decided", reply: { decision: decide(request.context) } });
    expect(output.reply?.decision.speech_act.intent).toBe("advise");
    expect(CouncilReply.safeParse(output.reply).success).toBe(true);
  });

  it("passes the reply's usage through", async () => {
    const reply: CouncilReply = {
      decision: decide(request.context),
      usage: { prompt_tokens: 120, completion_tokens: 40 },
    };
    const output = await toPromise(start(async () => reply));
    expect(output).toEqual({ status: "decided", reply });
  });

  it("fails with the error when deciding throws, and has no reply", async () => {
    const actor = start(async () => {
      throw new Error("model returned nonsense");
    });
    const output = await toPromise(actor);
    expect(actor.getSnapshot().value).toBe("failed");
    expect(output).toEqual({ status: "failed", error: "Error: model returned nonsense" });
    expect(output).not.toHaveProperty("reply");
  });

  it("fails without a provided decide actor", async () => {
    const actor = createActor(councilMachine, { input: request });
    actor.start();
    const output = await toPromise(actor);
    expect(output.status).toBe("failed");
    expect(output.error).toContain("must provide the 'decide' actor");
  });
});
