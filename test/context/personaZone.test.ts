/**
 * The persona is read: on a real nats-server with an in-process runner and
 * worker (offline mode), a persona set in the session's memory graph reaches
 * the agents' context in the `identity_persona` zone, and the turn's
 * CONTEXT_PLANNED cites it; an oversized one is cut to the zone's budget.
 */
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultTurnPolicy } from "../../machines/turn/context.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import { zoneLimits } from "../../src/context/zones.ts";
import type { AgentContext } from "../../src/contracts/agent.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { openMemoryGraph } from "../../src/memory/graph/open.ts";
import type { MemoryGraphStore } from "../../src/memory/graph/store.ts";
import { PERSONA_TEXT_MAX, personaText } from "../../src/memory/learn/index.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";

/** A small budget: the identity_persona zone's cap is 8% of it, 160 tokens. */
const BUDGET = { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 2_000 };
const CAP = zoneLimits(BUDGET.total_tokens).identity_persona.cap;

const nats = useNatsServer();
useInProcessStack(nats, { policy: { ...defaultTurnPolicy, context: { budget: BUDGET } } });

let client: ConclaveClient;
let graph: MemoryGraphStore;
let watcher: NatsConnection;
let requests: Subscription;
/** The context of each agent request seen on the bus, by session. */
const contexts = new Map<string, AgentContext[]>();
const waiting = new Map<string, () => void>();

beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
  graph = await openMemoryGraph({ nc: await nats.connect("worker") });
  // The agents' requests, as the workers get them (a plain subscription beside the workers' queue group).
  watcher = await nats.connect("worker");
  requests = watcher.subscribe(subjects.agent(">"));
  void (async () => {
    for await (const msg of requests) {
      const request = JSON.parse(new TextDecoder().decode(msg.data)) as { session_id: string; context: AgentContext };
      contexts.set(request.session_id, [...(contexts.get(request.session_id) ?? []), request.context]);
      waiting.get(request.session_id)?.();
    }
  })();
});
afterAll(async () => {
  requests?.unsubscribe();
  await graph?.close();
  await client?.close();
});

async function setPersona(session: string, traits: Record<string, number>): Promise<void> {
  await graph.upsertNode({
    id: "persona",
    session_id: session,
    kind: "persona",
    text: `${Object.keys(traits).length} traits`,
    topics: [],
    data: { traits, evolved_at_turn: 0 },
  });
}

/** A turn's events, and the first agent context of the session seen on the bus. */
async function turn(session: string, text: string): Promise<{ events: EngineEvent[]; context: AgentContext }> {
  const seen = new Promise<void>((resolve) => {
    if (contexts.has(session)) resolve();
    else waiting.set(session, resolve);
  });
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, text)) events.push(event);
  await seen;
  return { events, context: contexts.get(session)![0]! };
}

const plannedOf = (events: EngineEvent[]) => {
  const planned = events.find((event) => event.kind === "CONTEXT_PLANNED");
  if (planned?.kind !== "CONTEXT_PLANNED") throw new Error("no CONTEXT_PLANNED");
  return planned.payload;
};

describe("the persona in the identity_persona zone", () => {
  it("reaches the agents' context, and CONTEXT_PLANNED cites it", async () => {
    const traits = { attentive_to_jazz: 0.51, knows_user: 0.2, follow_through: 0.35 };
    await setPersona("persona-set", traits);
    const { events, context } = await turn("persona-set", "What should I listen to tonight?");
    const expected = personaText(traits);
    expect(expected).toBe(
      "What this conversation has taught you to attend to: attentive to jazz 0.51, follow through 0.35, knows user 0.2",
    );
    expect(context.persona).toBe(expected);
    const planned = plannedOf(events);
    expect(planned.zones.identity_persona.kept).toContain("persona");
    expect(planned.truncated).not.toContain("persona");
    expect(planned.zones.identity_persona.tokens).toBeGreaterThan(0);
  });

  it("is cut to the zone's budget when it is longer, and CONTEXT_PLANNED says it was", async () => {
    const traits = Object.fromEntries(
      Array.from({ length: 120 }, (_, index) => [`attentive_to_topic_number_${index}_of_many`, 0.5 - index / 1_000]),
    );
    await setPersona("persona-large", traits);
    expect(personaText(traits)).toHaveLength(PERSONA_TEXT_MAX);
    const { events, context } = await turn("persona-large", "Hello again.");
    const planned = plannedOf(events);
    expect(planned.zones.identity_persona.kept).toContain("persona");
    expect(planned.truncated).toContain("persona");
    expect(planned.zones.identity_persona.cap).toBe(CAP);
    expect(planned.zones.identity_persona.tokens).toBeLessThanOrEqual(CAP);
    expect(planned.zones.identity_persona.demand_tokens).toBeGreaterThan(CAP);
    // The agents get the cut persona: its start, and the note that it was cut.
    expect(context.persona).toMatch(
      /^What this conversation has taught you to attend to: attentive to topic number 0 /,
    );
    expect(context.persona).toMatch(/\[…truncated\]$/);
    expect(context.persona!.length).toBeLessThan(PERSONA_TEXT_MAX / 2);
  });

  it("is absent from a session whose memory has no persona", async () => {
    const { events, context } = await turn("persona-none", "Hi.");
    expect(context.persona).toBeUndefined();
    expect(plannedOf(events).zones.identity_persona.kept).not.toContain("persona");
  });
});
