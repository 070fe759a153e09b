/**
 * The memory's backend (PostgreSQL here) goes away: the turn still gets its
 * reply, and ends PartialSuccess with warnings naming the memory phases that
 * failed; once the backend is back, turns complete again and learn again.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { usePostgresServer } from "../helpers/postgres.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const postgres = usePostgresServer();
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_MEMORY_BACKEND: "postgres", CONCLAVE_POSTGRES_URL: postgres.url }),
);
let client: ConclaveClient;

beforeAll(async () => {
  await Promise.all([
    processes.spawn("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("runner", ["runner"]),
  ]);
  client = await connect({ nc: await nats.connect("client") });
});

async function say(session: string, text: string): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, text)) events.push(event);
  return events;
}

const completedOf = (events: EngineEvent[]) => {
  const completed = events.find((event) => event.kind === "TURN_COMPLETED");
  if (completed?.kind !== "TURN_COMPLETED") throw new Error("the turn did not complete");
  return completed.payload;
};

describe("the memory backend going away", () => {
  it("leaves the turn its reply, PartialSuccess naming the failed memory phases; back, it learns again", async () => {
    const session = "memory-down";
    expect(completedOf(await say(session, "I work night shifts at the hospital.")).outcome.status).toBe("Complete");

    await postgres.stop();
    const down = completedOf(await say(session, "I have a sister called Ana."));
    expect(down.response.length).toBeGreaterThan(0);
    expect(down.outcome.status).toBe("PartialSuccess");
    if (down.outcome.status !== "PartialSuccess") return;
    const memoryWarnings = down.outcome.warnings.filter((warning) => warning.stage === "memory_commit");
    expect(memoryWarnings.map((warning) => warning.code)).toEqual(
      expect.arrayContaining(["memory_pattern_persistence", "memory_runtime_state_persist"]),
    );

    await postgres.restart();
    const back = completedOf(await say(session, "I live in Lisbon."));
    expect(back.outcome.status).toBe("Complete");
    const found = await client.memory.search(session, "Lisbon home");
    expect(found.map((item) => item.text)).toContain("lives in Lisbon");
  });
});
