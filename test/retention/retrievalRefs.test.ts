/**
 * A turn's memory retrieval is stored by reference (issue 41, item 3): a fact
 * learnt at turn 1 reaches turn 2's agents, while turn 2's stored
 * MEMORY_RETRIEVED names it by id and holds none of its text. With a turn
 * limit of 1, once turn 1 is trimmed the fact is reachable nowhere (the
 * session's events, memory search, any store) and turn 2's reference
 * resolves to nothing. A real nats-server and stack; waits poll the stores.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { isRetrievedRefs } from "../../src/contracts/memory.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { retrievedOf } from "../helpers/memoryRefs.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { reachable } from "../helpers/reachable.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
useInProcessStack(nats, { retention: { minimumAgeMs: 1_000, turnsPerSession: 1 } });

let client: ConclaveClient;
let observer: NatsConnection;
/** A runner's: reads stored messages by sequence, and asks the memory service to resolve references. */
let inspector: NatsConnection;
/** A worker's: listens to the agents' requests (besides the worker that serves them), to see their context. */
let listener: NatsConnection;

beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
  observer = await nats.connect("observer");
  inspector = await nats.connect("runner");
  listener = await nats.connect("worker");
});

const SESSION = "retrieval-refs";
/** A word that occurs nowhere but in what turn 1 teaches. */
const CANARY = "zqrefcanaryx";
const decoder = new TextDecoder();

/** The user facts in the context of every agent request of the session's turn `turnId`, heard while `work` runs. */
async function agentFactsDuring(turnId: number, work: () => Promise<void>): Promise<string[]> {
  const facts: string[] = [];
  const sub = listener.subscribe(subjects.agent(">"), {
    callback: (error, msg) => {
      if (error) return;
      const request = JSON.parse(decoder.decode(msg.data)) as {
        session_id?: string;
        turn_id?: number;
        context?: { user_facts?: string[] };
      };
      if (request.session_id === SESSION && request.turn_id === turnId)
        facts.push(...(request.context?.user_facts ?? []));
    },
  });
  await listener.flush();
  try {
    await work();
  } finally {
    sub.unsubscribe();
  }
  return facts;
}

const storedTurn = async (turnId: number): Promise<EngineEvent[]> =>
  readEvents(jetstream(observer), await jetstreamManager(observer), SESSION, turnId);

describe("memory retrieval by reference", () => {
  it("gives turn 2 the fact turn 1 taught without copying it, and once turn 1 is trimmed it is nowhere", async () => {
    await client.submit(SESSION, `I live in ${CANARY}.`).result;
    const facts = await agentFactsDuring(2, async () => {
      await client.submit(SESSION, "Where should I go for dinner tonight?").result;
    });

    // Turn 2's context used the fact: its agents were sent it, and its planned context kept it.
    expect(facts.some((fact) => fact.includes(CANARY))).toBe(true);
    const second = await storedTurn(2);
    const planned = second.find((event) => event.kind === "CONTEXT_PLANNED");
    expect(JSON.stringify(planned?.payload)).toContain('"user_fact:0"');
    // Its stored MEMORY_RETRIEVED names turn 1's episode and the fact, and holds none of their text.
    const retrieved = second.find((event) => event.kind === "MEMORY_RETRIEVED");
    expect(retrieved?.kind).toBe("MEMORY_RETRIEVED");
    if (retrieved?.kind !== "MEMORY_RETRIEVED" || !isRetrievedRefs(retrieved.payload))
      throw new Error("MEMORY_RETRIEVED holds no references");
    const { refs } = retrieved.payload;
    expect(refs.episodes).toEqual([1]);
    expect(refs.facts.length).toBeGreaterThan(0);
    expect(JSON.stringify(retrieved).toLowerCase()).not.toContain(CANARY);

    // A turn limit of 1: turn 1 is trimmed once turn 2 ends, and nothing of the fact is left anywhere.
    const via = { client, observer, inspector };
    await until(async () => (await reachable(via, SESSION, CANARY)).length === 0, {
      what: `no copy of ${CANARY} left`,
      timeoutMs: 15_000,
      everyMs: 250,
    });
    // Turn 2's references stay in its log, and resolve to nothing: their sources are gone.
    const resolved = await retrievedOf(inspector, await storedTurn(2));
    expect(resolved.user_facts).toEqual([]);
    expect(resolved.episodes).toEqual([]);
    expect(resolved.unresolved).toBe(1 + refs.facts.length);
  }, 60_000);
});
