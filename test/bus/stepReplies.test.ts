/**
 * Steps asked again (a runner that took a turn over repeats the calls that
 * were under way) join the call under way, or get the answer given, on a
 * real endpoint: the work runs once. A failure is not kept.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromPromise } from "xstate";
import { z } from "zod";
import { HandlerError } from "../../src/bus/errors.ts";
import { requestJson } from "../../src/bus/request.ts";
import { serveActor } from "../../src/bus/serveActor.ts";
import { type Service, startService } from "../../src/bus/service.ts";
import { StepReplies } from "../../src/bus/stepReplies.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();
const Step = z.object({ session_id: z.string(), turn_id: z.number(), fail: z.boolean().default(false) });
const Reply = z.object({ answer: z.string(), run: z.number() });

let runs = 0;
let release: () => void = () => {};
let gate = Promise.resolve();
let service: Service;

beforeAll(async () => {
  service = startService(await nats.connect("worker"), "worker", { name: "steps-test", version: "0.0.1" });
  serveActor(
    service,
    {
      name: "decide",
      subject: subjects.councilDecide,
      request: Step,
      stepKey: (request) => `${request.session_id}.${request.turn_id}`,
      logic: fromPromise<{ answer: string; run: number }, z.infer<typeof Step>>(async ({ input }) => {
        runs += 1;
        const run = runs;
        await gate;
        if (input.fail) throw new HandlerError("agent_failed", `run ${run} failed`);
        return { answer: `answer of ${input.session_id}/${input.turn_id}`, run };
      }),
      reply: (output) => output,
    },
    { steps: new StepReplies() },
  );
});

afterAll(async () => {
  await service?.stop();
});

describe("step replies", () => {
  it("answer a step asked again while under way, and after, from the one run", async () => {
    const nc = await nats.connect("runner");
    gate = new Promise((resolve) => {
      release = resolve;
    });
    const ask = () =>
      requestJson(nc, subjects.councilDecide, { session_id: "s", turn_id: 1 }, Reply, { timeoutMs: 5_000 });
    const first = ask();
    const again = ask(); // the runner that took the turn over
    release();
    const replies = await Promise.all([first, again, ask()]);
    expect(runs).toBe(1);
    for (const reply of replies) expect(reply).toEqual({ answer: "answer of s/1", run: 1 });
    // Another step runs.
    await expect(
      requestJson(nc, subjects.councilDecide, { session_id: "s", turn_id: 2 }, Reply, { timeoutMs: 5_000 }),
    ).resolves.toEqual({ answer: "answer of s/2", run: 2 });
    await nc.close();
  });

  it("do not keep a failure: the step asked again runs again", async () => {
    const nc = await nats.connect("runner");
    const before = runs;
    const ask = (fail: boolean) =>
      requestJson(nc, subjects.councilDecide, { session_id: "f", turn_id: 1, fail }, Reply, { timeoutMs: 5_000 });
    await expect(ask(true)).rejects.toThrow(/failed/);
    await expect(ask(false)).resolves.toMatchObject({ answer: "answer of f/1" });
    expect(runs - before).toBe(2);
    await nc.close();
  });

  it("keep answers for a bounded time and number", async () => {
    const steps = new StepReplies(60_000, 2);
    const work = (text: string) => () => Promise.resolve(new TextEncoder().encode(text));
    await steps.reply("a", work("a"));
    await steps.reply("b", work("b"));
    await steps.reply("c", work("c"));
    expect(steps.size).toBe(2);
    const expired = new StepReplies(0);
    await expired.reply("a", work("first"));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(new TextDecoder().decode(await expired.reply("a", work("second")))).toBe("second");
  });
});
