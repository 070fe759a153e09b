/**
 * JsonKv's writes (put, and update's compare-and-set): against a real server
 * with the runner's permissions, what is written is what is read, a compare-and-set decided on a
 * stale copy loses and is retried on what is stored, a create happens once
 * (and again over a deleted key), and a bad key is refused.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { JsonKv } from "../../src/bus/jsonKv.ts";
import { buckets } from "../../src/bus/subjects.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();
const Counter = z.object({ n: z.number() });

describe("JsonKv writes", () => {
  it("put and update store what a read returns, at the revision they report", async () => {
    const kv = await JsonKv.open(await nats.connect("runner"), buckets.sessions, Counter);
    await kv.put("kvtest.put", { n: 1 });
    const first = await kv.get("kvtest.put");
    expect(first?.value).toEqual({ n: 1 });
    expect(await kv.update("kvtest.put", (current) => ({ n: (current?.n ?? 0) + 1 }))).toEqual({ n: 2 });
    const second = await kv.get("kvtest.put");
    expect(second).toEqual({ value: { n: 2 }, revision: expect.any(Number) });
    expect(second!.revision).toBeGreaterThan(first!.revision);
    const raw = await kv.kv.get("kvtest.put");
    expect(raw?.revision).toBe(second!.revision);
  });

  it("retries a compare-and-set that another writer made stale, on what is stored", async () => {
    // Two processes' copies of one key, each remembering the revision it last saw.
    const a = await JsonKv.open(await nats.connect("runner"), buckets.sessions, Counter, { cacheRevisions: 10 });
    const b = await JsonKv.open(await nats.connect("runner"), buckets.sessions, Counter, { cacheRevisions: 10 });
    const add = (current: { n: number } | null) => ({ n: (current?.n ?? 0) + 1 });
    await a.update("kvtest.cas", add);
    await b.update("kvtest.cas", add); // b's write makes a's remembered revision stale
    const seen: Array<number | null> = [];
    await a.update("kvtest.cas", (current) => {
      seen.push(current?.n ?? null);
      return add(current);
    });
    expect(seen).toEqual([1, 2]); // first on a's stale copy (refused by the server), then on what is stored
    expect((await b.get("kvtest.cas"))?.value).toEqual({ n: 3 });
    await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).update("kvtest.cas", add)));
    expect((await a.get("kvtest.cas"))?.value).toEqual({ n: 13 });
  });

  it("creates a key once, and again after it was deleted", async () => {
    const kv = await JsonKv.open(await nats.connect("runner"), buckets.sessions, Counter);
    expect(await kv.create("kvtest.create", { n: 1 })).toBe(true);
    expect(await kv.create("kvtest.create", { n: 2 })).toBe(false);
    expect((await kv.get("kvtest.create"))?.value).toEqual({ n: 1 });
    await kv.delete("kvtest.create");
    expect(await kv.get("kvtest.create")).toBeNull();
    expect(await kv.create("kvtest.create", { n: 3 })).toBe(true);
    expect((await kv.get("kvtest.create"))?.value).toEqual({ n: 3 });
    // update creates an absent key the same way
    expect(await kv.update("kvtest.fresh", (current) => ({ n: (current?.n ?? 0) + 5 }))).toEqual({ n: 5 });
    expect((await kv.get("kvtest.fresh"))?.value).toEqual({ n: 5 });
  });

  it("reads through the stream's leader with leaderReads, within the runner's permissions", async () => {
    // The session owners' bucket, as the runner's leases open it: every read there decides who runs a session.
    const Owner = z.object({ runner: z.string() });
    const kv = await JsonKv.open(await nats.connect("runner"), buckets.owners, Owner, { leaderReads: true });
    expect((kv.kv as typeof kv.kv & { direct: boolean }).direct).toBe(false);
    expect(await kv.create("kvtest-owned", { runner: "a" })).toBe(true);
    expect(await kv.create("kvtest-owned", { runner: "b" })).toBe(false);
    expect((await kv.get("kvtest-owned"))?.value).toEqual({ runner: "a" });
    await kv.delete("kvtest-owned");
    expect(await kv.get("kvtest-owned")).toBeNull();
    // A create over a deleted key reads the delete's revision first: through the leader too.
    expect(await kv.create("kvtest-owned", { runner: "b" })).toBe(true);
    expect((await kv.get("kvtest-owned"))?.value).toEqual({ runner: "b" });
  });

  it("refuses a key KV cannot hold, before sending anything", async () => {
    const kv = await JsonKv.open(await nats.connect("runner"), buckets.sessions, Counter);
    await expect(kv.put("kvtest.bad key", { n: 1 })).rejects.toThrow(/invalid key/);
    await expect(kv.put("kvtest.", { n: 1 })).rejects.toThrow(/invalid key/);
  });
});
