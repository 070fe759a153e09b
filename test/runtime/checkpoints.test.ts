/**
 * Replay checkpoints of every domain, on a real nats-server with an
 * in-process runner and worker (offline mode): a runner checkpointing every
 * two turns stores each domain's fold (session, ledgers, cost, memory,
 * schedules), and replaying from the latest checkpoint plus the turns and
 * events after it gives exactly the state replaying from the first event gives.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { beforeAll, describe, expect, it } from "vitest";
import { buckets } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { replayTape } from "../../src/runtime/checkpoints/tape.ts";
import type { TapeClients } from "../../src/runtime/checkpoints/tapeReader.ts";
import { type Checkpoint, SessionStore } from "../../src/runtime/sessionStore.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";

const nats = useNatsServer();
useInProcessStack(nats, { checkpointEvery: 2 });

let client: ConclaveClient;
let sessions: SessionStore;
let clients: TapeClients;

beforeAll(async () => {
  const nc = await nats.connect("runner");
  client = await connect({ nc: await nats.connect("client") });
  sessions = await SessionStore.open(nc);
  clients = { js: jetstream(nc), jsm: await jetstreamManager(nc) };
});

async function say(session: string, text: string): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, text)) events.push(event);
  return events;
}

/** Waits, on the session bucket's watch, for the session's checkpoint through `turnId` with its domains. */
async function checkpointThrough(session: string, turnId: number): Promise<Checkpoint> {
  const kv = await new Kvm(await nats.connect("runner")).open(buckets.sessions);
  const watch = await kv.watch({ key: `checkpoint.${session}` });
  try {
    for await (const entry of watch) {
      if (entry.operation !== "PUT") continue;
      const checkpoint = entry.json<Checkpoint>();
      if (checkpoint.through_turn_id >= turnId && checkpoint.domains) return checkpoint;
    }
  } finally {
    watch.stop();
  }
  throw new Error("the watch ended");
}

describe("replay checkpoints of every domain", () => {
  const session = "tape-five";

  it("replays from the latest checkpoint plus the delta to the same state as from the start, domain by domain", async () => {
    await client.schedules.create({
      id: "tape-early",
      session_id: session,
      what: { text: "check in" },
      when: { at: Date.now() + 86_400_000 },
    });
    const texts = ["I have a sister called Ana.", "I love jazz.", "I live in Lisbon.", "I work at the hospital."];
    for (const [index, text] of texts.entries()) {
      await say(session, text);
      await client.truth.upsertFact(session, { statement: `fact number ${index + 1}` });
    }
    const checkpoint = await checkpointThrough(session, 4);
    // After the checkpoint: a fifth turn, a ledger write and a schedule, folded from the log on top of it.
    await say(session, "Remind me to call the bank tomorrow.");
    await client.task.setSpec(session, { goal: "plan the week" });
    await client.schedules.create({
      id: "tape-late",
      session_id: session,
      what: { text: "check in again" },
      when: { at: Date.now() + 86_400_000 },
    });

    const fromCheckpoint = await replayTape(clients, sessions, session, "checkpoint");
    const fromStart = await replayTape(clients, sessions, session, "start");
    expect(fromCheckpoint.from_turn_id).toBe(4);
    expect(fromStart.from_turn_id).toBe(0);
    expect(checkpoint.domains?.cut.through_turn_id).toBe(4);

    const [a, b] = [fromCheckpoint.state, fromStart.state];
    expect(a.session, "session domain").toEqual(b.session);
    expect(a.ledgers, "ledgers domain").toEqual(b.ledgers);
    expect(a.cost, "cost domain").toEqual(b.cost);
    expect(a.memory, "memory domain").toEqual(b.memory);
    expect(a.schedules, "schedules domain").toEqual(b.schedules);
    expect(a.cut, "cut").toEqual(b.cut);
    expect(a).toEqual(b);

    // And the state is the session's: five turns, four facts and a spec, five turns of cost, both schedules.
    expect(b.session.turns_completed).toBe(5);
    expect(b.session).toEqual(await sessions.snapshot(session));
    expect(b.ledgers.truth.facts).toHaveLength(4);
    expect(b.ledgers.task.spec?.goal).toBe("plan the week");
    expect(b.ledgers).toEqual(await client.ledgers.state(session));
    expect(b.cost.turns).toBe(5);
    expect(b.cost.total).toEqual((await client.cost(session)).total);
    expect(b.memory.committed_turns).toEqual([1, 2, 3, 4, 5]);
    expect(Object.keys(b.schedules).sort()).toEqual(["tape-early", "tape-late"]);
    // The checkpoint itself held only what was there through turn 4.
    expect(checkpoint.domains?.session.turns_completed).toBe(4);
    expect(checkpoint.domains?.ledgers.truth.facts.length).toBeLessThanOrEqual(4);
    expect(Object.keys(checkpoint.domains?.schedules ?? {})).toEqual(["tape-early"]);
  });
});
