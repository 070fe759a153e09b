import { describe, expect, it } from "vitest";
import { createActor, fromPromise, toPromise } from "xstate";
import { type CriticInput, criticMachine } from "../../machines/critic.ts";
import { offlineBackend } from "../../src/cognition/backend.ts";
import { CRITICS } from "../../src/cognition/critics.ts";
import type { CriticReply, CriticRequest } from "../../src/contracts/critic.ts";

const request: CriticRequest = {
  session_id: "s1",
  turn_id: 2,
  user_message: "Do you ever feel lonely?",
  response: "That's a thoughtful question. I feel the same way sometimes.",
  speech_act: { intent: "reflect", key_points: [], do_not: ["claim to have feelings"] },
  attempt: 1,
};

function start(critic: string, judge: (input: CriticInput) => Promise<CriticReply>) {
  const actor = createActor(criticMachine.provide({ actors: { judge: fromPromise(({ input }) => judge(input)) } }), {
    input: { critic, request },
  });
  actor.start();
  return actor;
}

const offline = ({ critic, request: criticRequest }: CriticInput) =>
  offlineBackend.judge(critic, criticRequest, new AbortController().signal);

describe("critic machine", () => {
  it("is judged with the critic's reply, given the critic and the request", async () => {
    const seen: CriticInput[] = [];
    const actor = start("coherence", async (input) => {
      seen.push(input);
      return offline(input);
    });
    const output = await toPromise(actor);
    expect(actor.getSnapshot().value).toBe("judged");
    expect(seen).toEqual([{ critic: "coherence", request }]);
    expect(output).toEqual({ status: "judged", reply: { result: CRITICS.coherence!(request) } });
    expect(output.reply?.result.passed).toBe(true);
  });

  it("is judged, not errored, when the reply fails the critic", async () => {
    const actor = start("do_not", offline);
    const output = await toPromise(actor);
    expect(actor.getSnapshot().value).toBe("judged");
    expect(output.status).toBe("judged");
    expect(output.reply?.result).toMatchObject({ critic: "do_not", passed: false });
    expect(output.reply?.result.feedback).toContain('Remove: "I feel the same way sometimes."');
    expect(output).not.toHaveProperty("error");
  });

  it("errors when the critic cannot judge, and has no reply", async () => {
    const actor = start("tone", offline);
    const output = await toPromise(actor);
    expect(actor.getSnapshot().value).toBe("errored");
    expect(output.status).toBe("errored");
    expect(output.error).toMatch(/^UnknownCriticError: no critic 'tone'/);
    expect(output).not.toHaveProperty("reply");
  });

  it("errors with the thrown error when judging fails", async () => {
    const output = await toPromise(
      start("safety", async () => {
        throw new Error("rate limited");
      }),
    );
    expect(output).toEqual({ status: "errored", error: "Error: rate limited" });
  });

  it("errors without a provided judge actor", async () => {
    const actor = createActor(criticMachine, { input: { critic: "safety", request } });
    actor.start();
    const output = await toPromise(actor);
    expect(output.status).toBe("errored");
    expect(output.error).toContain("must provide the 'judge' actor");
  });
});
