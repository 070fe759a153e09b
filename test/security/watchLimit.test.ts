import type { Msg, NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { encodeJson } from "../../src/bus/codec.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { ErrorReply } from "../../src/contracts/errors.ts";
import { MAX_CANCEL_BYTES } from "../../src/runtime/intake/cancel.ts";
import { MAX_SUBMISSION_BYTES } from "../../src/runtime/intake/ingress.ts";
import { MAX_RESUME_BYTES } from "../../src/runtime/intake/resume.ts";
import { MAX_WATCH_BYTES } from "../../src/runtime/intake/watch.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

/**
 * A watch request (`conclave.turn.watch.<session>`, a tenant's way to read
 * its events) is three small fields: a body anywhere near the public
 * subjects' 64 KiB is refused as too large before it is parsed, like every
 * other public request, and the runner goes on serving.
 */
const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: NatsConnection;

beforeAll(async () => {
  await processes.spawn("runner", ["runner"]);
  client = await nats.connect("client");
});

/** The first reply to a watch request (an error reply, or the first event, or the end of the stream). */
const watch = (session: string, body: Uint8Array): Promise<Msg> =>
  client.request(subjects.turnWatch(session), body, { timeout: 5_000 });

/** A valid watch request padded (with a field the schema ignores) to `bytes`. */
function padded(bytes: number): Uint8Array {
  const head = encodeJson({ follow: false, pad: "" });
  return encodeJson({ follow: false, pad: "x".repeat(bytes - head.length) });
}

describe("the watch subject", () => {
  it("has a limit of its own, no larger than the other public subjects'", () => {
    expect(MAX_WATCH_BYTES).toBeLessThanOrEqual(65_536);
    expect(MAX_WATCH_BYTES).toBeLessThanOrEqual(Math.min(MAX_SUBMISSION_BYTES, MAX_RESUME_BYTES));
    expect(MAX_WATCH_BYTES).toBeGreaterThanOrEqual(MAX_CANCEL_BYTES);
    expect(padded(MAX_WATCH_BYTES)).toHaveLength(MAX_WATCH_BYTES);
  });

  it("refuses a 100 KiB body with payload_too_large, and the runner keeps serving", async () => {
    const refused = await watch("big-watch", padded(100 * 1024));
    expect(refused.headers?.get("Nats-Service-Error-Code")).toBe("413");
    expect(ErrorReply.parse(refused.json()).error.code).toBe("payload_too_large");
    // One byte over the limit is refused too; at the limit it is a watch like any other.
    const over = await watch("big-watch", padded(MAX_WATCH_BYTES + 1));
    expect(ErrorReply.parse(over.json()).error.code).toBe("payload_too_large");
    for (const body of [padded(MAX_WATCH_BYTES), encodeJson({}), new Uint8Array()]) {
      const served = await watch("big-watch", body);
      expect(served.headers?.has("Nats-Service-Error-Code") ?? false).toBe(false);
      expect(served.data).toHaveLength(0); // no events yet: the end of the stream at once
    }
  });
});
