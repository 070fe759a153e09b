import { jetstream } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { eventStreamOf, subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect, type LoggedEvent } from "../../src/client/index.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { matchText, searchableText, searchWords } from "../../src/eventlog/search.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { settledStatus } from "../helpers/turnStatus.ts";

const nats = useNatsServer();
useInProcessStack(nats, { checkpointEvery: 2 });
let client: ConclaveClient;
/** The whole tape of session "tape", as a query with no range reads it. */
let all: LoggedEvent[];

beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
  await client.submit("tape", "My cat Ziggy knocked the plant over").result;
  await client.submit("tape", "Should I repot the Monstera this weekend?").result;
  await client.submit("tape", "thanks, that helps").result;
  await settledStatus(client.nc, "tape", 3);
  all = await client.queryEvents("tape");
}, 60_000);

describe("queryEvents", () => {
  it("reads the whole tape in log order with positions and stored times", () => {
    expect(all.length).toBeGreaterThan(10);
    expect(new Set(all.map((logged) => logged.event.turn_id))).toEqual(new Set([1, 2, 3]));
    for (let i = 1; i < all.length; i++) {
      const [before, here] = [all[i - 1]!, all[i]!];
      expect(here.position).toBeGreaterThanOrEqual(before.position);
      // Events sharing a position are one stored batch: the next events of one turn, stored at one time.
      if (here.position === before.position) {
        expect([here.event.turn_id, here.event.seq]).toEqual([before.event.turn_id, before.event.seq + 1]);
        expect(here.time).toBe(before.time);
      }
      expect(Date.parse(here.time)).toBeGreaterThanOrEqual(Date.parse(before.time));
    }
    // The turns' events were stored in batches: fewer positions than events.
    expect(new Set(all.map((logged) => logged.position)).size).toBeLessThan(all.length);
  });

  it("filters by kind, turn and limit", async () => {
    const completed = await client.queryEvents("tape", { kinds: ["TURN_COMPLETED"] });
    expect(completed.map((logged) => logged.event.turn_id)).toEqual([1, 2, 3]);
    const two = await client.queryEvents("tape", { kinds: ["TURN_STARTED", "TURN_COMPLETED"], turnId: 2 });
    expect(two.map((logged) => logged.event.kind)).toEqual(["TURN_STARTED", "TURN_COMPLETED"]);
    const firstFive = await client.queryEvents("tape", { limit: 5 });
    expect(firstFive).toEqual(all.slice(0, 5));
  });

  it("filters by position, bounds included", async () => {
    const from = all[4]!.position;
    const to = all[9]!.position;
    // A position reads every event stored at it (a batch's too).
    expect(await client.queryEvents("tape", { fromSeq: from, toSeq: to })).toEqual(
      all.filter((logged) => logged.position >= from && logged.position <= to),
    );
    expect(await client.queryEvents("tape", { fromSeq: all.at(-1)!.position + 1 })).toEqual([]);
  });

  it("filters by stored time, from the stream's own start time", async () => {
    const turnTwo = all.find((logged) => logged.event.turn_id === 2)!;
    const since = new Date(turnTwo.time);
    const expected = all.filter((logged) => Date.parse(logged.time) >= since.getTime());
    const found = await client.queryEvents("tape", { since });
    expect(found).toEqual(expected);
    expect(found.some((logged) => logged.event.turn_id === 3)).toBe(true);
    const until = Date.parse(turnTwo.time);
    expect(await client.queryEvents("tape", { until })).toEqual(
      all.filter((logged) => Date.parse(logged.time) <= until),
    );
    expect(await client.queryEvents("tape", { since: Date.now() + 60_000 })).toEqual([]);
    expect(await client.queryEvents("tape", { until: Date.parse(all[0]!.time) - 1 })).toEqual([]);
  });

  it("reads nothing for a session without events, and refuses a bad range", async () => {
    expect(await client.queryEvents("nobody-here")).toEqual([]);
    await expect(client.queryEvents("tape", { fromSeq: 0 })).rejects.toMatchObject({ code: "invalid_request" });
    await expect(client.queryEvents("tape", { fromSeq: 9, toSeq: 3 })).rejects.toThrow(/after toSeq/);
    await expect(client.queryEvents("tape", { since: 10, until: 5 })).rejects.toThrow(/since is after until/);
    await expect(client.queryEvents("tape", { kinds: ["NOPE" as "TURN_STARTED"] })).rejects.toThrow(
      /unknown event kind/,
    );
    await expect(client.queryEvents("tape", { limit: 0 })).rejects.toThrow(/bad limit/);
    await expect(client.queryEvents("bad.session")).rejects.toMatchObject({ code: "invalid_request" });
  });
});

describe("searchEvents", () => {
  it("finds events holding every word, case-insensitive, with an excerpt to highlight", async () => {
    const hits = await client.searchEvents("tape", "ziggy CAT");
    expect(hits.length).toBeGreaterThan(0);
    expect(hits[0]!.event).toMatchObject({ kind: "TURN_STARTED", turn_id: 1 });
    for (const hit of hits) {
      const marked = hit.highlights.map(([start, end]) => hit.excerpt.slice(start, end).toLowerCase());
      expect(marked).toContain("ziggy");
      expect(marked).toContain("cat");
    }
    // Inside a longer word; only among the kinds asked for; and a miss.
    const monstera = await client.searchEvents("tape", "monst", { kinds: ["TURN_STARTED"] });
    expect(monstera.map((hit) => hit.event.turn_id)).toEqual([2]);
    // Every word must be there: no question asked about both (later turns' memory holds both, in one event).
    expect(await client.searchEvents("tape", "ziggy monstera", { kinds: ["TURN_STARTED"] })).toEqual([]);
    expect((await client.searchEvents("tape", "ziggy monstera")).every((hit) => hit.event.turn_id > 1)).toBe(true);
    expect(await client.searchEvents("tape", "xylophone")).toEqual([]);
    // Field names are not searched: every TURN_STARTED has `user_input`.
    expect(await client.searchEvents("tape", "user_input", { kinds: ["TURN_STARTED"] })).toEqual([]);
    expect(await client.searchEvents("tape", "the", { limit: 2 })).toHaveLength(2);
    await expect(client.searchEvents("tape", " ,; ")).rejects.toMatchObject({ code: "invalid_request" });
  });

  it("tokenises and excerpts as documented", () => {
    expect(searchWords("Ziggy's  plant, ZIGGY")).toEqual(["ziggy", "s", "plant"]);
    const event = {
      session_id: "s",
      turn_id: 1,
      seq: 0,
      ts_monotonic: 0,
      kind: "TURN_STARTED" as const,
      payload: { user_input: `${"x ".repeat(100)}the Deadline is near`, turn_id: 1 },
    };
    const text = searchableText(event);
    expect(text.endsWith("the Deadline is near 1")).toBe(true);
    const matched = matchText(text, ["deadline"])!;
    expect(matched.excerpt.startsWith("…")).toBe(true);
    const [start, end] = matched.highlights[0]!;
    expect(matched.excerpt.slice(start, end)).toBe("Deadline");
    expect(matchText(text, ["deadline", "absent"])).toBeNull();
  });
});

describe("tapeStatus", () => {
  it("counts the session's events, turns and bytes exactly, with its first and last", async () => {
    const status = await client.tapeStatus("tape");
    expect(status).toMatchObject({
      session_id: "tape",
      events: all.length,
      turns: 3,
      first: { position: all[0]!.position, time: all[0]!.time },
      last: { position: all.at(-1)!.position, time: all.at(-1)!.time },
      checkpoint: null,
    });
    expect(status.checkpoint_unavailable).toMatch(/runner role/);
    // The bytes are the stored bodies': read them whole to compare.
    const runner = await nats.connect("runner");
    const count = await eventStreamCount(runner);
    const consumer = await jetstream(runner).consumers.get(eventStreamOf("tape", count), {
      filter_subjects: subjects.sessionEvents("tape", count),
    });
    let bytes = 0;
    for (const _position of new Set(all.map((logged) => logged.position)))
      bytes += (await consumer.next())!.data.length;
    expect(status.bytes).toBe(bytes);
    expect(await client.tapeStatus("nobody-here")).toMatchObject({ events: 0, turns: 0, bytes: 0, first: null });
  });
});
