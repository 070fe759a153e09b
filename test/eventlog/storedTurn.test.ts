/**
 * What one turn stores, pinned (issue 37, "The cheap turn"): the writes each JetStream stream
 * takes for a turn of the default layout (`conclave up`: two agent workers, a memory worker, a
 * runner hosting the scheduler, council and critics), and the stored log read back by an outside
 * client written in C (libnats), equal to what the turn's live watcher saw.
 *
 * The budgets are today's counts: a change that stores more per turn fails here and says where.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busOptions, connectBus, DEV_CREDENTIALS } from "../../src/bus/connection.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { parseStoredEvents } from "../../src/contracts/eventBatch.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { TurnAck } from "../../src/contracts/turn.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const run = promisify(execFile);
/** Most event-log messages one turn may store: its events go in batches (counted at 0.3.0: 11 or 12 in the bench's wire trace). */
const MESSAGES_PER_TURN = 20;
const INSTRUMENT = { user: "stored-turn-instrument", password: "stored-turn-instrument" };
// One more user in the CONCLAVE account, with no permission limits: the test's instrument lists every stream
// (no role may). Every Conclave process keeps its role.
const nats = useNatsServer({
  editConfig: (config) =>
    config.replace(
      /(CONCLAVE \{[\s\S]*?users: \[)/,
      `$1\n      { user: "${INSTRUMENT.user}", password: "${INSTRUMENT.password}" }`,
    ),
});
const processes = useConclaveProcesses(() => nats.url);
const buildDir = mkdtempSync(join(tmpdir(), "conclave-c-client-"));
const readTurnBinary = join(buildDir, "readTurn");
let instrument: NatsConnection;

/**
 * Most writes one offline turn of the default layout may store (counted at 0.3.0 before batches: 50
 * events, 78 writes in all: the event log 50, step replies 14, sessions 5, turn statuses 4, memory 3, the
 * WAL 1, the scheduler 1). With batches (issue 37) the 50 events take MESSAGES_PER_TURN. Runner
 * heartbeats are left out: they follow the clock, not the turn.
 */
const WRITES_PER_TURN_BUDGET = { events: 50, messages: MESSAGES_PER_TURN, all: MESSAGES_PER_TURN + 28 };
const HEARTBEATS = "KV_conclave_runners";

beforeAll(async () => {
  // The C client, compiled against the system's libnats (npm run setup installs libnats-dev).
  await run("cc", [
    "-Wall",
    "-o",
    readTurnBinary,
    join(import.meta.dirname, "../fixtures/c/readTurn.c"),
    "-lnats",
  ]).catch((error: { stderr?: string }) => {
    throw new Error(`cannot build the C client (npm run setup installs gcc and libnats-dev): ${error.stderr ?? error}`);
  });
  await Promise.all([
    processes.spawn("worker[inhibition,monitoring,reasoning]", [
      "worker",
      "--agents",
      "inhibition.*,monitoring.*,reasoning.*",
    ]),
    processes.spawn("worker[emotion,social,planning]", ["worker", "--agents", "emotion.*,social.*,planning.*"]),
    processes.spawn("worker[memory]", ["worker", "--services", "memory"]),
  ]);
  await processes.spawn("runner", ["runner", "--cognition", "runner"]);
  instrument = await connectBus(
    busOptions("observer", { servers: nats.url, ...INSTRUMENT, inboxPrefix: "_INBOX", persistent: false }),
  );
});

afterAll(async () => {
  await instrument?.close();
  rmSync(buildDir, { recursive: true, force: true });
});

async function turn(session: string, text: string): Promise<{ ack: TurnAck; live: EngineEvent[] }> {
  const nc = await nats.connect("client");
  const ack = await submitTurn(nc, session, { text });
  const live: EngineEvent[] = [];
  await watchTurn(nc, ack, (event) => live.push(event), 30_000);
  return { ack, live };
}

/** Every stream's last sequence: how many writes it has stored in all. */
async function writesByStream(): Promise<Map<string, number>> {
  const jsm = await jetstreamManager(instrument);
  const writes = new Map<string, number>();
  for await (const stream of jsm.streams.list()) writes.set(stream.config.name, stream.state.last_seq);
  return writes;
}

/** Each stream chunk's text joined per stream: the live watch sends every chunk, the log stores runs of them. */
function withoutChunks(events: readonly (EngineEvent & { v?: number })[]) {
  return events.filter((event) => event.kind !== "STREAM_CHUNK").map(({ v: _v, ...event }) => event);
}

describe("one stored turn", () => {
  it("stores at most its budget of writes, its events in batches", async () => {
    await turn("stored-warmup", "Hello there"); // streams and buckets made, the session's first writes done
    const before = await writesByStream();
    const { live } = await turn("stored-warmup", "I'm stressed about my deadline and my manager keeps adding work");
    const after = await writesByStream();
    const grew: Record<string, number> = {};
    for (const [name, last] of after)
      if (name !== HEARTBEATS && last > (before.get(name) ?? 0)) grew[name] = last - (before.get(name) ?? 0);
    const messages = Object.entries(grew)
      .filter(([name]) => name.startsWith("CONCLAVE_EVENTS_"))
      .reduce((sum, [, writes]) => sum + writes, 0);
    const all = Object.values(grew).reduce((sum, writes) => sum + writes, 0);
    // Live chunks coalesce into fewer stored ones; the stored events go in fewer messages still.
    const events = (live.at(-1)?.seq ?? -1) + 1;
    const what = `${events} events in ${messages} messages; writes ${JSON.stringify(grew)}`;
    expect(events, what).toBeLessThanOrEqual(WRITES_PER_TURN_BUDGET.events);
    expect(messages, what).toBeLessThanOrEqual(WRITES_PER_TURN_BUDGET.messages);
    expect(all, what).toBeLessThanOrEqual(WRITES_PER_TURN_BUDGET.all);
  });

  it("is read back by a C client (libnats) as the live watcher saw it, in order", async () => {
    const { ack, live } = await turn("stored-c", "There's a bug in my code and I'm stuck. Can you help?");
    const stream = `CONCLAVE_EVENTS_${ack.events_subject.split(".")[2]}`;
    const { user, password } = DEV_CREDENTIALS.client;
    const { stdout } = await run(readTurnBinary, [nats.url, user, password, stream, ack.events_subject]);
    // One line per stored message: an event, or a batch of them (docs/protocol.md).
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { v?: number; events?: (EngineEvent & { v?: number })[] });
    expect(lines.some((line) => line.v === 2 && (line.events?.length ?? 0) > 1)).toBe(true);
    const stored = lines.flatMap((line) =>
      line.v === 2 ? (line.events ?? []) : [line as EngineEvent & { v?: number }],
    );
    expect(stored.length).toBeGreaterThan(lines.length);
    expect(stored.at(-1)?.kind).toBe("TURN_COMPLETED");
    expect(stored.map((event) => event.seq)).toEqual(stored.map((_, index) => index));
    expect(stored.every((event) => event.v === 1)).toBe(true);
    // The product's own reading of the same lines gives the same events.
    expect(lines.flatMap((line) => parseStoredEvents(line, "a line").events)).toEqual(
      stored.map(({ v: _v, ...event }) => event),
    );
    // Every event the live watcher saw, in the same order, with the same payloads (chunks aside: the
    // watcher gets each as it is made, the log stores runs of them, with the same text).
    expect(withoutChunks(stored)).toEqual(withoutChunks(live));
    const text = (events: readonly EngineEvent[]) =>
      events.flatMap((event) => (event.kind === "STREAM_CHUNK" ? [event.payload.delta] : [])).join("");
    expect(text(stored)).toBe(text(live));
  });
});
