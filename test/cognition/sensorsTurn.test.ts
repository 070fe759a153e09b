import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect, type EngineEvent } from "../../src/client/index.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";

/**
 * End to end: the fixtures' messages as turns of a runner and a worker over
 * a real nats-server, in offline mode, with the runner's default sensors and
 * interceptors (what `conclave send` gets).
 */
const fixture = (name: string): string[] =>
  JSON.parse(readFileSync(new URL(`../fixtures/sensors/${name}`, import.meta.url), "utf8")) as string[];
const BENIGN = fixture("benign-trigger-words.json");
const ATTACKS = fixture("injection-attempts.json");
const DECLINE = "I can't change how I work";

const nats = useNatsServer();
useInProcessStack(nats);
let client: ConclaveClient;
beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
});

/** Submits `text` as the first turn of its own session; its events, its outcome and reply. */
async function turn(session: string, text: string) {
  const stream = client.submit(session, text);
  const events: EngineEvent[] = [];
  for await (const event of stream) events.push(event);
  const result = await stream.result;
  const decision = events.find((event) => event.kind === "COUNCIL_DECISION_MADE");
  const sensed = events.find((event) => event.kind === "SENSORS_FAST_UPDATED");
  return {
    status: result.outcome.status,
    response: result.response,
    intent: decision?.kind === "COUNCIL_DECISION_MADE" ? decision.payload.intent : undefined,
    injection: sensed?.kind === "SENSORS_FAST_UPDATED" ? sensed.payload.sensors.prompt_injection : undefined,
    intercepted: events.filter((event) => event.kind === "REQUEST_INTERCEPTED").length,
  };
}

describe("a runner's turn", () => {
  it("answers each of the 50 benign messages with trigger words without a decline", async () => {
    for (const [index, text] of BENIGN.entries()) {
      const result = await turn(`benign-${index}`, text);
      expect(result, text).toMatchObject({ injection: 0, intercepted: 0 });
      expect(["Complete", "PartialSuccess"], text).toContain(result.status);
      expect(result.intent, text).toBeDefined();
      expect(result.intent, text).not.toBe("decline");
      expect(result.response, text).not.toContain(DECLINE);
    }
  }, 120_000); // 50 turns one after another, on a machine shared with other test runs

  it("declines each injection attempt", async () => {
    for (const [index, text] of ATTACKS.entries()) {
      const result = await turn(`attack-${index}`, text);
      expect(result, text).toMatchObject({ injection: 0.8, intent: "decline", intercepted: 1 });
      expect(result.response, text).toContain(DECLINE);
    }
  }, 120_000);
});
