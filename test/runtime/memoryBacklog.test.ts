/**
 * The runner's side of memory commits that get no answer (settleCommits, with
 * its backlog in KV on a real nats-server): tried again within the stage,
 * kept owed when still unanswered, made in turn order before anything newer.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { subjects } from "../../src/bus/subjects.ts";
import type { MemoryCommitReply } from "../../src/contracts/memory.ts";
import type { Episode } from "../../src/contracts/workspace.ts";
import { MemoryBacklog, settleCommits } from "../../src/runtime/turnServices/memoryBacklog.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();
let backlog: MemoryBacklog;

beforeAll(async () => {
  backlog = await MemoryBacklog.open(await nats.connect("runner"));
});

const episode = (session: string, turnId: number): Episode => ({
  session_id: session,
  turn_id: turnId,
  user_text: `message ${turnId}`,
  response: "Okay.",
  intent: "support",
  ts: 0,
});
const noWorker = () => new RemoteCallError(subjects.memoryCommit, "no_responders", "no worker is serving it");
const stored = (turnId: number): MemoryCommitReply => ({ summary: `episode of turn ${turnId}`, stored: true });

/** A memory service that fails the first `failures` requests with `error`, then stores; it notes every turn asked. */
function memoryService(failures: number, error: () => Error = noWorker) {
  const asked: number[] = [];
  return {
    asked,
    commit: async (item: Episode) => {
      asked.push(item.turn_id);
      if (asked.length <= failures) throw error();
      return stored(item.turn_id);
    },
  };
}

const turnsOf = async (session: string) => (await backlog.owed(session)).map((item) => item.turn_id);

describe("settleCommits", () => {
  it("tries a commit that found no worker again within the window, and owes nothing once it is made", async () => {
    const memory = memoryService(2);
    const signal = new AbortController().signal;
    const reply = await settleCommits("s-retry", episode("s-retry", 1), { backlog, ...memory, signal, retryMs: 5_000 });
    expect(reply).toEqual(stored(1));
    expect(memory.asked).toEqual([1, 1, 1]);
    expect(await turnsOf("s-retry")).toEqual([]);
  });

  it("keeps a commit still unanswered after the window, says so, and makes it first next time", async () => {
    const down = memoryService(Number.POSITIVE_INFINITY);
    const signal = new AbortController().signal;
    const error = await settleCommits("s-owed", episode("s-owed", 1), { backlog, ...down, signal, retryMs: 300 }).catch(
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(RemoteCallError);
    expect(error).toMatchObject({ code: "no_responders" });
    expect((error as Error).message).toContain("kept and made before the session's next turn");
    expect(await turnsOf("s-owed")).toEqual([1]);
    const owed = await backlog.owed("s-owed");
    expect(owed[0]?.ts).toBeGreaterThan(0); // stamped when kept, not when made

    // Still down at the next turn's commit: it waits behind the one owed, untried, and is owed too.
    const next = await settleCommits("s-owed", episode("s-owed", 2), { backlog, ...down, signal, retryMs: 0 }).catch(
      (failure: unknown) => failure,
    );
    expect(next).toMatchObject({ code: "no_responders" });
    expect(await turnsOf("s-owed")).toEqual([1, 2]);

    // Back: before the next retrieval the owed commits are made, in turn order.
    const up = memoryService(0);
    expect(await settleCommits("s-owed", null, { backlog, ...up, signal, retryMs: 0 })).toBeUndefined();
    expect(up.asked).toEqual([1, 2]);
    expect(await turnsOf("s-owed")).toEqual([]);
  });

  it("makes the owed commits before this turn's", async () => {
    await backlog.keep(episode("s-order", 3));
    const memory = memoryService(0);
    const signal = new AbortController().signal;
    expect(await settleCommits("s-order", episode("s-order", 4), { backlog, ...memory, signal, retryMs: 0 })).toEqual(
      stored(4),
    );
    expect(memory.asked).toEqual([3, 4]);
    expect(await turnsOf("s-order")).toEqual([]);
  });

  it("drops an owed commit the memory refuses (it would block the session for good), but throws this turn's refusal", async () => {
    await backlog.keep(episode("s-refused", 1));
    const refusing = memoryService(Number.POSITIVE_INFINITY, () => new RemoteCallError("m", "invalid_request", "no"));
    const signal = new AbortController().signal;
    const error = await settleCommits("s-refused", episode("s-refused", 2), {
      backlog,
      ...refusing,
      signal,
      retryMs: 5_000,
    }).catch((failure: unknown) => failure);
    expect(error).toMatchObject({ code: "invalid_request", message: "no" });
    expect(refusing.asked).toEqual([1, 2]);
    expect(await turnsOf("s-refused")).toEqual([]);
  });

  it("stops trying when the stage ends (its signal aborts), the commit kept", async () => {
    const down = memoryService(Number.POSITIVE_INFINITY);
    const stage = new AbortController();
    setTimeout(() => stage.abort(), 150);
    const started = Date.now();
    await expect(
      settleCommits("s-abort", episode("s-abort", 1), { backlog, ...down, signal: stage.signal, retryMs: 60_000 }),
    ).rejects.toBeDefined();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await turnsOf("s-abort")).toEqual([1]);
  });
});
