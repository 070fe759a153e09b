/**
 * Step answers shared by the workers of a service (KV conclave_step_replies,
 * on a real nats-server with the workers' permissions): a step asked of a
 * second worker while the first runs it, or after, is not run again there; a
 * failure is not kept; a claim whose worker died is taken over; a big answer
 * is not stored; a wait ends at the step's deadline; a step answered before
 * its claim is due is stored after its reply, never claimed.
 */
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { HandlerError } from "../../src/bus/errors.ts";
import { CLAIM_AFTER_MS, MAX_SHARED_REPLY_BYTES, SharedSteps, STEP_REPLY_TTL_MS } from "../../src/bus/sharedSteps.ts";
import { StepReplies } from "../../src/bus/stepReplies.ts";
import { buckets } from "../../src/bus/subjects.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const bytes = (value: string) => new TextEncoder().encode(value);

/** One worker's step answers, on a connection of its own. */
async function worker(name: string, nc?: NatsConnection): Promise<StepReplies> {
  const connection = nc ?? (await nats.connect("worker"));
  const shared = new SharedSteps(connection, name, (line) => console.error(line)).open();
  sharedOf.set(name, shared);
  return new StepReplies(60_000, 100, shared);
}
const sharedOf = new Map<string, SharedSteps>();

/** Waits until `worker` has seen the step's key: asked the step now, it claims first (and so waits on its holder). */
const seen = (key: string, worker: string) =>
  until(() => sharedOf.get(worker)!.claimsFirst(key), { what: `${worker} seeing ${key}` });

/** A work that counts its runs and answers when released. */
function gatedWork(answer: string) {
  let release: () => void = () => {};
  let fail: (error: Error) => void = () => {};
  const gate = new Promise<void>((resolve, reject) => {
    release = resolve;
    fail = reject;
  });
  const work = {
    runs: 0,
    run: async () => {
      work.runs += 1;
      await gate;
      return bytes(answer);
    },
    release: () => release(),
    fail: (error: Error) => fail(error),
  };
  return work;
}

let observer: NatsConnection;

beforeAll(async () => {
  observer = await nats.connect("worker");
});

/** The step's record in KV, or null. */
async function stored(key: string): Promise<{ state: string; worker?: string } | null> {
  const kv = await new Kvm(observer).create(buckets.stepReplies, { history: 1, ttl: STEP_REPLY_TTL_MS });
  const entry = await kv.get(key);
  return entry?.operation === "PUT" ? (JSON.parse(text(entry.value)) as { state: string; worker?: string }) : null;
}

/** Waits until `worker` holds the step's claim in KV. */
const claimed = (key: string, worker: string) =>
  until(async () => (await stored(key))?.worker === worker, { what: `${worker}'s claim on ${key}` });

describe("step answers shared by a service's workers", () => {
  it("are joined by a second worker while the first runs the step, and given to a third after", async () => {
    const [a, b, c] = await Promise.all([worker("a"), worker("b"), worker("c")]);
    const first = gatedWork("from a");
    const second = gatedWork("from b");
    const asked = a.reply("s1.council.1", first.run);
    await claimed("s1.council.1", "a");
    await seen("s1.council.1", "b");
    const joined = b.reply("s1.council.1", second.run);
    first.release();
    expect(text(await asked)).toBe("from a");
    expect(text(await joined)).toBe("from a");
    await seen("s1.council.1", "c");
    expect(text(await c.reply("s1.council.1", second.run))).toBe("from a");
    expect([first.runs, second.runs]).toEqual([1, 0]);
    expect(await stored("s1.council.1")).toMatchObject({ state: "done" });
  });

  it("do not keep a failure: the worker waiting on it runs the step", async () => {
    const [a, b] = await Promise.all([worker("a"), worker("b")]);
    const first = gatedWork("unused");
    const second = gatedWork("from b");
    second.release();
    const failed = a.reply("s2.council.1", first.run);
    await claimed("s2.council.1", "a");
    await seen("s2.council.1", "b");
    const waiting = b.reply("s2.council.1", second.run);
    first.fail(new HandlerError("agent_failed", "the model failed"));
    await expect(failed).rejects.toThrow("the model failed");
    expect(text(await waiting)).toBe("from b");
    expect([first.runs, second.runs]).toEqual([1, 1]);
  });

  it("take over the claim of a worker that died mid-call (the one repeat left)", async () => {
    const doomed = await nats.connect("worker");
    const [a, b] = await Promise.all([worker("a", doomed), worker("b")]);
    const lost = gatedWork("never");
    const again = gatedWork("from b");
    again.release();
    void a.reply("s3.council.1", lost.run).catch(() => {});
    await claimed("s3.council.1", "a");
    await seen("s3.council.1", "b");
    await doomed.close(); // its claim is no longer renewed
    expect(text(await b.reply("s3.council.1", again.run))).toBe("from b");
    expect([lost.runs, again.runs]).toEqual([1, 1]);
    expect(await stored("s3.council.1")).toMatchObject({ state: "done" });
  });

  it("do not store a big answer: another worker asked after runs the step", async () => {
    const [a, b] = await Promise.all([worker("a"), worker("b")]);
    const big = "x".repeat(MAX_SHARED_REPLY_BYTES + 1);
    let runs = 0;
    const work = async () => {
      runs += 1;
      return bytes(big);
    };
    expect((await a.reply("s4.council.1", work)).length).toBe(big.length);
    expect(await a.reply("s4.council.1", work)).toHaveLength(big.length); // its own worker keeps it in memory
    expect(runs).toBe(1);
    expect(await stored("s4.council.1")).toBeNull();
    await b.reply("s4.council.1", work);
    expect(runs).toBe(2);
  });

  it("end a wait on another worker at the step's deadline, with a timeout", async () => {
    const [a, b] = await Promise.all([worker("a"), worker("b")]);
    const first = gatedWork("from a");
    const second = gatedWork("from b");
    const asked = a.reply("s5.council.1", first.run);
    await claimed("s5.council.1", "a");
    await seen("s5.council.1", "b");
    await expect(b.reply("s5.council.1", second.run, 200)).rejects.toMatchObject({ code: "timeout" });
    first.release();
    expect(text(await asked)).toBe("from a");
    expect(second.runs).toBe(0);
  });

  it("run a step no worker was seen to hold at once, unclaimed, and store its answer after the reply", async () => {
    const [a, b] = await Promise.all([worker("a"), worker("b")]);
    // Both follow the bucket's keys: a step neither has seen runs with no claim first.
    await until(
      () => !sharedOf.get("a")!.claimsFirst("s6.council.1") && !sharedOf.get("b")!.claimsFirst("s6.council.1"),
      {
        what: "the workers following the bucket's keys",
      },
    );
    let runs = 0;
    const work = async () => {
      runs += 1;
      return bytes("quick");
    };
    const started = Date.now();
    expect(text(await a.reply("s6.council.1", work))).toBe("quick");
    // Answered before its claim was due: nothing in KV was waited on.
    expect(Date.now() - started).toBeLessThan(CLAIM_AFTER_MS);
    await until(async () => (await stored("s6.council.1"))?.state === "done", { what: "the answer stored" });
    await seen("s6.council.1", "b");
    expect(text(await b.reply("s6.council.1", work))).toBe("quick");
    expect(runs).toBe(1);
  });
});
