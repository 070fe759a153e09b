/**
 * Adaptive zones through the runner, on a real nats-server with an in-process runner and worker
 * (offline mode): a session whose truth ledger holds more than its zone's cap loses facts to the
 * cap turn after turn, so its third turn grows the cap (CONTEXT_ZONES_ADAPTED) and the fourth keeps
 * more facts; `conclave verify` replays the session state, adaptation included, from the log.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultTurnPolicy } from "../../machines/turn/context.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { CAP_STEP, STARVED_TURNS } from "../../src/context/adaptiveZones.ts";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import { ZONE_SHARES } from "../../src/context/zones.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";

const BUDGET = { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 2_000 };
const nats = useNatsServer();
useInProcessStack(nats, { policy: { ...defaultTurnPolicy, context: { budget: BUDGET } } });

let client: ConclaveClient;
beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await client?.close();
});

async function turn(session: string): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, "What do we know so far?")) events.push(event);
  return events;
}
const plannedOf = (events: EngineEvent[]) => {
  const planned = events.find((event) => event.kind === "CONTEXT_PLANNED");
  if (planned?.kind !== "CONTEXT_PLANNED") throw new Error("no CONTEXT_PLANNED");
  return planned.payload;
};

describe("adaptive zones in a session", () => {
  it("grow a starved zone's cap on the third turn, keep more of it after, and replay from the log", async () => {
    const session = "zones-adapt";
    for (let index = 0; index < 30; index++)
      await client.truth.upsertFact(session, {
        statement: `Fact number ${index} about the greenhouse: the tomatoes on shelf ${index} need water every morning`,
      });
    const turns: EngineEvent[][] = [];
    for (let index = 0; index < STARVED_TURNS + 1; index++) turns.push(await turn(session));
    const adapted = turns.map((events) => events.find((event) => event.kind === "CONTEXT_ZONES_ADAPTED"));
    expect(adapted.slice(0, STARVED_TURNS - 1)).toEqual([undefined, undefined]);
    const grown = Math.round((ZONE_SHARES.truth.cap + CAP_STEP) * 10_000) / 10_000;
    expect(adapted[STARVED_TURNS - 1]).toMatchObject({
      kind: "CONTEXT_ZONES_ADAPTED",
      payload: { changes: [{ zone: "truth", from_share: ZONE_SHARES.truth.cap, to_share: grown, reason: "starved" }] },
    });
    const [first, , , fourth] = turns.map(plannedOf);
    expect(fourth!.zones.truth.cap).toBe(Math.floor(grown * BUDGET.total_tokens));
    expect(fourth!.zones.truth.kept.length).toBeGreaterThan(first!.zones.truth.kept.length);
    expect(fourth!.adaptation?.caps).toEqual({ truth: grown });

    // The session state's replay from the log has the adaptation the runner stored (compared by verify).
    const verified = await runConclave(nats.url, ["verify", "--session", session, "--json"]);
    expect(verified.code).toBe(0);
    expect(verified.stdout).not.toContain("context_arena.zones");
  });
});
