/**
 * Explicit compaction requests (issue 38, seed 003), on a real nats-server with an in-process runner
 * and worker (offline mode): a request made as a user makes it (`conclave session compact`), or
 * through the client, makes the session's next turn compact whatever the pressure, its
 * CONTEXT_COMPACTED naming the reason `requested`; the request is then no longer pending, and the
 * turn after does not compact again. A fork of a session whose request was consumed has none pending.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent, EventPayload } from "../../src/contracts/events.ts";
import { partitionOf } from "../../src/contracts/partitions.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { turnLog } from "../helpers/turns.ts";

const nats = useNatsServer();
useInProcessStack(nats);

let client: ConclaveClient;
beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await client?.close();
});

/** Runs a turn to its end; its stored events. */
async function turn(session: string, text: string): Promise<EngineEvent[]> {
  const submitted = client.submit(session, text);
  const { turn_id: turnId } = await submitted.ack;
  await submitted.result;
  return turnLog(client, session, turnId);
}

const compactionOf = (events: EngineEvent[]): EventPayload<"CONTEXT_COMPACTED"> | undefined =>
  events.flatMap((event) => (event.kind === "CONTEXT_COMPACTED" ? [event.payload] : []))[0];

describe("a compaction request", () => {
  it("asked with `conclave session compact`, compacts the next turn once, with its reason", async () => {
    const session = "compact-cli";
    for (const text of ["I plan a garden.", "Roses by the wall.", "Tomatoes in June."]) {
      expect(compactionOf(await turn(session, text))).toBeUndefined();
    }
    expect(await client.pendingCompaction(session)).toBeNull();

    const asked = await runConclave(nats.url, [
      "session",
      "compact",
      session,
      "--reason",
      "switching topics",
      "--instructions",
      "keep the plants",
    ]);
    expect(asked.stderr).toBe("");
    expect(asked.code).toBe(0);
    expect(asked.stdout.trim()).toBe(
      `compaction requested for session ${session}: its next turn compacts (reason: switching topics; instructions: keep the plants)`,
    );
    expect(await client.pendingCompaction(session)).toEqual({
      reason: "switching topics",
      instructions: "keep the plants",
    });
    const shown = await runConclave(nats.url, ["session", "compaction", session]);
    expect(shown.stdout.trim()).toBe(
      `session ${session}: compaction pending (reason: switching topics; instructions: keep the plants)`,
    );

    // Turn 4: a short conversation at normal pressure, compacted because it was asked.
    const events = await turn(session, "Now, about my bike.");
    const compacted = compactionOf(events);
    expect(compacted).toMatchObject({
      reason: "requested",
      request_reason: "switching topics",
      instructions: "keep the plants",
      turns_compacted: [1],
    });
    expect(compacted?.pressure.level).toBe("normal");
    expect(compacted?.request_seq).toBeGreaterThan(0);
    const planned = events.find((event) => event.kind === "CONTEXT_PLANNED");
    expect(planned?.kind === "CONTEXT_PLANNED" && planned.payload.zones.working_memory.kept).toContain("summary");

    // Consumed: nothing pending, and the next turn does not compact again.
    expect(await client.pendingCompaction(session)).toBeNull();
    const none = await runConclave(nats.url, ["session", "compaction", session]);
    expect(none.stdout.trim()).toBe(`session ${session}: no compaction pending`);
    expect(compactionOf(await turn(session, "It has a flat tyre."))).toBeUndefined();
    // Each CLI run starts a process: more than a turn's time.
  }, 120_000);

  it("asked through the client, twice before a turn, is consumed by one compaction", async () => {
    const session = "compact-client";
    for (const text of ["One.", "Two.", "Three.", "Four."]) await turn(session, text);
    await client.requestCompaction(session, { reason: "first" });
    const second = await client.requestCompaction(session, { reason: "second" });
    expect(second).toEqual({ reason: "second" });
    expect(await client.pendingCompaction(session)).toEqual({ reason: "second", instructions: null });
    const compacted = compactionOf(await turn(session, "Five."));
    expect(compacted).toMatchObject({ reason: "requested", request_reason: "second", turns_compacted: [1, 2] });
    expect(await client.pendingCompaction(session)).toBeNull();
    expect(compactionOf(await turn(session, "Six."))).toBeUndefined();
  });

  it("consumed before a fork, is not pending in the fork, whose own request is", async () => {
    const session = "compact-forked";
    for (const text of ["One.", "Two.", "Three.", "Four."]) await turn(session, text);
    await client.requestCompaction(session, { reason: "tidy up" });
    expect(compactionOf(await turn(session, "Five."))).toMatchObject({ reason: "requested" });
    expect(await client.pendingCompaction(session)).toBeNull();

    // The fork's copy of the request has a stream sequence of its own, after the source's (the same stream):
    // what the source's compaction consumed is consumed in the fork too.
    const streams = await eventStreamCount(await nats.connect("runner"));
    const fork = ["a", "b", "c", "d", "e", "f", "g", "h"]
      .map((suffix) => `compact-forked-${suffix}`)
      .find((id) => partitionOf(id, streams) === partitionOf(session, streams))!;
    await client.fork({ session, at: { turn: 5 }, as: fork });
    expect(await client.pendingCompaction(fork)).toBeNull();
    expect(compactionOf(await turn(fork, "Six."))).toBeUndefined();

    // A request made to the fork is its own: pending, then consumed by the fork's next turn.
    await client.requestCompaction(fork, { reason: "fork's own" });
    expect(await client.pendingCompaction(fork)).toEqual({ reason: "fork's own", instructions: null });
    expect(compactionOf(await turn(fork, "Seven."))).toMatchObject({
      reason: "requested",
      request_reason: "fork's own",
    });
    expect(await client.pendingCompaction(fork)).toBeNull();
  }, 120_000);

  it("refuses a bad request with one line, before anything is sent", async () => {
    await expect(client.requestCompaction("compact-bad", { reason: "" })).rejects.toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(/^bad compaction request: reason: /),
    });
    const cli = await runConclave(nats.url, ["session", "compact", "compact-bad"]);
    expect(cli.code).toBe(2);
    expect(cli.stderr.trim()).toBe(
      "conclave session: session compact needs --reason TEXT (why it is asked) (see conclave session --help)",
    );
  }, 60_000);
});
