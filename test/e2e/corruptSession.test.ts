import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { describe, expect, it } from "vitest";
import { buckets } from "../../src/bus/subjects.ts";
import { submitTurn } from "../../src/client/turns.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { settledStatus } from "../helpers/turnStatus.ts";

/**
 * A session whose stored state fails its schema (a forged or damaged KV
 * value): that session's turn fails at once, visibly, with the error in its
 * log; other sessions go on; and once the value is repaired, the session's
 * next turn runs — a failed read is never remembered.
 */
const nats = useNatsServer();
useInProcessStack(nats);

describe("a session whose stored state is unreadable", () => {
  it("fails that session's turn with the error in its log, leaves other sessions alone, and recovers once repaired", async () => {
    const nc = await nats.connect("runner");
    const client = await nats.connect("client");
    const sessions = await new Kvm(nc).open(buckets.sessions);
    await sessions.put("snapshot.damaged", JSON.stringify({ turns_completed: "many", modulators: null }));

    const first = await submitTurn(client, "damaged", { text: "I'm stressed about my deadline" });
    const healthy = await submitTurn(client, "healthy", { text: "I'm stressed about my deadline" });
    expect((await settledStatus(nc, "damaged", first.turn_id)).status).toBe("failed");
    expect((await settledStatus(nc, "healthy", healthy.turn_id)).status).toBe("done");

    const events = await readEvents(jetstream(nc), await jetstreamManager(nc), "damaged", first.turn_id);
    expect(events.map((event) => event.kind)).toEqual(["TURN_COMPLETED"]);
    const completed = events[0];
    expect(completed?.kind === "TURN_COMPLETED" && completed.payload.outcome).toMatchObject({
      status: "Failed",
      error: { code: "corrupt_value" },
    });

    // The operator repairs the session (here: removes the damaged snapshot; the session starts afresh).
    await sessions.delete("snapshot.damaged");
    const second = await submitTurn(client, "damaged", { text: "I'm stressed about my deadline" });
    expect((await settledStatus(nc, "damaged", second.turn_id)).status).toBe("done");
  });
});
