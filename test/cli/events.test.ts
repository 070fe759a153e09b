import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect, type LoggedEvent, type TapeStatus } from "../../src/client/index.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { settledStatus } from "../helpers/turnStatus.ts";

const nats = useNatsServer();
useInProcessStack(nats, { checkpointEvery: 2 });
let client: ConclaveClient;

beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
  await client.submit("cli-tape", "My cat Ziggy knocked the plant over").result;
  await client.submit("cli-tape", "Should I repot the Monstera this weekend?").result;
  await settledStatus(client.nc, "cli-tape", 2); // its checkpoint (every 2 turns) is saved before it settles
}, 60_000);

const lines = (text: string) => text.split("\n").filter(Boolean);

describe("conclave events query", () => {
  it("prints one readable line per event of the range, and JSON lines with --json", async () => {
    const readable = await runConclave(nats.url, [
      "events",
      "query",
      "--session",
      "cli-tape",
      "--type",
      "turn_completed",
    ]);
    expect(readable.stderr).toBe("");
    expect(readable.code).toBe(0);
    expect(lines(readable.stdout)).toHaveLength(2);
    expect(readable.stdout).toMatch(/^#\d+ \d{4}-\d\d-\d\dT\S+ turn 1\.\d+ TURN_COMPLETED {2}✔ Complete in [\d.]+ ms/m);

    const json = await runConclave(nats.url, ["events", "query", "--session", "cli-tape", "--turn", "2", "--json"]);
    expect(json.code).toBe(0);
    const found = lines(json.stdout).map((line) => JSON.parse(line) as LoggedEvent);
    expect(found.length).toBeGreaterThan(3);
    expect(Object.keys(found[0]!).sort()).toEqual(["event", "position", "time"]);
    expect(found.every((logged) => logged.event.turn_id === 2)).toBe(true);

    // Positions and times bound the range; -10m (or 10m) is ten minutes before now.
    const [from, to] = [found[1]!.position, found[2]!.position];
    const bySeq = await runConclave(nats.url, [
      "events",
      "query",
      "--session",
      "cli-tape",
      "--from-seq",
      String(from),
      "--to-seq",
      String(to),
      "--since=-10m",
      "--json",
    ]);
    // A position reads every event stored at it (a batch's events share theirs).
    expect(lines(bySeq.stdout).map((line) => (JSON.parse(line) as LoggedEvent).position)).toEqual(
      found.filter((logged) => logged.position >= from && logged.position <= to).map((logged) => logged.position),
    );
    const future = await runConclave(nats.url, [
      "events",
      "query",
      "--session",
      "cli-tape",
      "--since",
      "2099-01-01T00:00:00Z",
    ]);
    expect(future.code).toBe(0);
    expect(future.stdout).toBe("");
    expect(future.stderr).toMatch(/no events of session cli-tape in that range/);
  }, 60_000);

  it("keeps `conclave events --session` as it was", async () => {
    const { code, stdout } = await runConclave(nats.url, ["events", "--session", "cli-tape", "--json", "--positions"]);
    expect(code).toBe(0);
    const first = JSON.parse(lines(stdout)[0]!) as { position: number; event: { kind: string } };
    expect(first.event.kind).toBe("TURN_STARTED");
  });
});

describe("conclave events search", () => {
  it("prints the hits with their words marked, JSON with --json, and a note for none", async () => {
    const readable = await runConclave(nats.url, [
      "events",
      "search",
      "--session",
      "cli-tape",
      "--type",
      "TURN_STARTED",
      "ziggy",
    ]);
    expect(readable.code).toBe(0);
    expect(lines(readable.stdout)).toEqual([
      expect.stringMatching(/^#\d+ turn 1\.0 TURN_STARTED: My cat «Ziggy» knocked/),
    ]);
    const json = await runConclave(nats.url, [
      "events",
      "search",
      "--session",
      "cli-tape",
      "repot",
      "monstera",
      "--json",
      "--limit",
      "1",
    ]);
    const hits = lines(json.stdout).map((line) => JSON.parse(line) as { excerpt: string; highlights: number[][] });
    expect(hits).toHaveLength(1);
    expect(hits[0]!.highlights).toHaveLength(2);
    const none = await runConclave(nats.url, ["events", "search", "--session", "cli-tape", "xylophone"]);
    expect(none.code).toBe(0);
    expect(none.stdout).toBe("");
    expect(none.stderr).toMatch(/no event of session cli-tape holds "xylophone"/);
  }, 60_000);
});

describe("conclave events status", () => {
  it("prints the tape's figures and last checkpoint, JSON with --json", async () => {
    const json = await runConclave(nats.url, ["events", "status", "--session", "cli-tape", "--json"]);
    expect(json.stderr).toBe("");
    const status = JSON.parse(json.stdout) as TapeStatus;
    const all = await client.queryEvents("cli-tape");
    expect(status).toMatchObject({
      session_id: "cli-tape",
      events: all.length,
      turns: 2,
      first: { position: all[0]!.position },
      last: { position: all.at(-1)!.position },
      checkpoint: { through_turn_id: 2, turns_completed: 2 },
    });
    expect(status.bytes).toBeGreaterThan(all.length * 50);
    const readable = await runConclave(nats.url, ["events", "status", "--session", "cli-tape"]);
    expect(readable.stdout).toMatch(
      new RegExp(`^session cli-tape: ${all.length} event\\(s\\) in 2 turn\\(s\\), [\\d.]+ (B|KiB)\\n`),
    );
    expect(readable.stdout).toMatch(/last checkpoint: through turn 2 \(2 turn\(s\) completed\)/);
    const empty = await runConclave(nats.url, ["events", "status", "--session", "nobody", "--json"]);
    expect(JSON.parse(empty.stdout)).toMatchObject({ events: 0, bytes: 0, first: null, checkpoint: null });
  }, 60_000);
});

describe("bad invocations", () => {
  it.each([
    [["events", "query", "--session", "cli-tape", "--type", "NOPE"], /unknown event kind 'NOPE'/],
    [["events", "query", "--session", "cli-tape", "--since", "yesterday"], /--since must be an ISO time/],
    [["events", "query", "--session", "cli-tape", "--from-seq", "9", "--to-seq", "2"], /--from-seq must not be after/],
    [["events", "query", "--session", "cli-tape", "--limit", "0"], /--limit must be a whole number from 1/],
    [
      ["events", "query", "--session", "cli-tape", "--since", "1m", "--until", "10m"],
      /--since must not be after --until/,
    ],
    [["events", "query", "--session", "cli-tape", "--follow"], /--follow does not go with events query/],
    [["events", "search", "--session", "cli-tape"], /give the words to search for/],
    [["events", "status", "--session", "cli-tape", "--type", "TURN_STARTED"], /--type does not go with/],
    [["events", "rewind", "--session", "cli-tape"], /unknown events subcommand 'rewind'/],
    [["events", "query"], /--session is required/],
  ])("%j is a one-line usage error", async (args, message) => {
    const { code, stdout, stderr } = await runConclave(nats.url, args);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(lines(stderr)).toHaveLength(1);
    expect(stderr).toMatch(message);
  });
});
