import { describe, expect, it } from "vitest";
import { createActor, fromPromise, toPromise } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import { zeroSensors } from "../../machines/turn/index.ts";
import { quietOutput } from "../../src/agents/defineAgent.ts";
import type { AgentAnswer, AgentRequest, Contribution } from "../../src/contracts/agent.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { never } from "../helpers/turns.ts";

const request = (timeout_ms = 1_000): AgentRequest => ({
  session_id: "s",
  turn_id: 1,
  agent_id: "emotion.stress",
  wave: 1,
  mode: "respond",
  round: 0,
  timeout_ms,
  context: {
    user_message: "hi",
    sensors: zeroSensors(),
    modulators: neutralModulators(),
    stance: neutralStance(),
    claims: [],
    episodes: [],
  },
});
const output: Contribution = {
  ...quietOutput(),
  claims: [{ id: "c", text: "a claim", confidence: 0.5 }],
  supports: [],
  opposes: [],
  proposals: [],
  stance_delta: {},
};

function start(think: (signal: AbortSignal) => Promise<AgentAnswer>, timeout_ms?: number) {
  const actor = createActor(agentMachine.provide({ actors: { think: fromPromise(({ signal }) => think(signal)) } }), {
    input: request(timeout_ms),
  });
  actor.start();
  return actor;
}

describe("agent machine", () => {
  it("waits in idle until started, then replies with its output", async () => {
    const actor = start(async () => ({ output, contribution: output }));
    expect(actor.getSnapshot().value).toBe("idle");
    actor.send({ type: "start" });
    expect(await toPromise(actor)).toEqual({
      agent_id: "emotion.stress",
      status: "replied",
      answer: { output, contribution: output },
    });
    expect(actor.getSnapshot().value).toBe("replied");
  });

  it("fails with agent_failed when thinking throws", async () => {
    const actor = start(async () => {
      throw new Error("model said nonsense");
    });
    actor.send({ type: "start" });
    expect(await toPromise(actor)).toEqual({
      agent_id: "emotion.stress",
      status: "failed",
      error: { code: "agent_failed", message: "model said nonsense" },
    });
  });

  it("fails with timeout at the request's budget and aborts the thinking", async () => {
    let aborted = false;
    const actor = start((signal) => {
      signal.addEventListener("abort", () => {
        aborted = true;
      });
      return never(signal);
    }, 30);
    actor.send({ type: "start" });
    const result = await toPromise(actor);
    expect(result).toMatchObject({ status: "failed", error: { code: "timeout" } });
    expect(aborted).toBe(true);
  });

  it("can be cancelled while thinking", async () => {
    const actor = start((signal) => never(signal));
    actor.send({ type: "start" });
    actor.send({ type: "cancel" });
    expect(await toPromise(actor)).toMatchObject({ status: "failed", error: { message: "cancelled" } });
  });
});
