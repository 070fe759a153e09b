/**
 * A suspended run cannot be wedged by one bad answer: a resume whose input
 * nests 8 000 arrays deep is refused as invalid_request before anything
 * changes, and a valid answer afterwards completes the run. An answer that
 * passes every check but cannot be stored puts the status back to
 * suspended. A submission nested that deep is refused without taking a
 * turn id.
 */
import { readFileSync } from "node:fs";
import { jetstream } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../../src/bus/codec.ts";
import { requestJson } from "../../src/bus/request.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { ErrorReply } from "../../src/contracts/errors.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { TurnAck } from "../../src/contracts/turn.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { parseRecipeText } from "../../src/recipes/load.ts";
import { resumeSuspended } from "../../src/runtime/recipeHost/resume.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;

const approval = () => parseRecipeText(readFileSync("recipes/approval.yaml", "utf8")) as JsonObject;
const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

beforeAll(async () => {
  await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "./agents/recipes/index.ts"]),
    processes.spawn("runner", ["runner"]),
  ]);
  client = await connect({ nc: await nats.connect("client") });
});

/** Sends a raw body (not built by our client, which could not encode it) and returns the error reply's code. */
async function rawErrorCode(subject: string, body: string): Promise<string> {
  const nc = await nats.connect("client");
  const reply = await nc.request(subject, new TextEncoder().encode(body), { timeout: 10_000 });
  const parsed = ErrorReply.safeParse(reply.json());
  if (!parsed.success) throw new Error(`expected an error reply, got ${reply.string().slice(0, 200)}`);
  return parsed.data.error.code;
}

describe("a suspended run and a hostile answer", () => {
  it("refuses an input nested 8 000 deep as invalid_request, keeps the run suspended, and takes a valid answer after", async () => {
    const run = await client.run("wedge-1", approval(), { inputs: { topic: "our new API" } });
    expect(run.status).toBe("suspended");
    const turnId = run.turnId;
    await until(async () => (await client.status("wedge-1", turnId))?.status === "suspended", {
      what: "suspended status",
    });

    const body = `{"turn_id":${turnId},"user_id":"mallory","role":"editor","input":${nested(8_000)}}`;
    expect(await rawErrorCode(subjects.turnResume("wedge-1"), body)).toBe("invalid_request");
    expect((await client.status("wedge-1", turnId))?.status).toBe("suspended");

    const done = await client.resume("wedge-1", turnId, { input: { approved: true }, userId: "ana", role: "editor" });
    expect(done.status).toBe("completed");
  });

  it("puts the status back to suspended when the answer cannot be stored", async () => {
    const run = await client.run("wedge-2", approval(), { inputs: { topic: "pricing" } });
    expect(run.status).toBe("suspended");
    await until(async () => (await client.status("wedge-2", run.turnId))?.status === "suspended", {
      what: "suspended status",
    });
    const runnerNc = await nats.connect("runner");
    const statuses = await TurnStatusStore.open(runnerNc);
    const before = await statuses.get("wedge-2", run.turnId);
    // The WAL entry goes to a subject no stream stores, so JetStream refuses it for real.
    const js = jetstream(runnerNc);
    const failing = {
      js: { publish: (_subject: string, data: Uint8Array) => js.publish("conclave.nowhere", data, { timeout: 1_000 }) },
      statuses,
    } as unknown as Parameters<typeof resumeSuspended>[0];
    await expect(
      resumeSuspended(
        failing,
        "wedge-2",
        run.turnId,
        { node: "approve", answer: { approved: true }, user_id: "ana", role: "editor", timed_out: false },
        before?.suspended?.seq,
      ),
    ).rejects.toThrow();
    const after = await statuses.get("wedge-2", run.turnId);
    expect(after?.status).toBe("suspended");
    expect(after?.suspended).toEqual(before?.suspended);

    const done = await client.resume("wedge-2", run.turnId, {
      input: { approved: false },
      userId: "ana",
      role: "editor",
    });
    expect(done.status).toBe("completed");
  });

  it("refuses a submission nested deeper than the limit without taking a turn id", async () => {
    const nc = await nats.connect("client");
    const submit = (text: string) =>
      requestJson(nc, subjects.turnSubmit("wedge-3"), { text }, TurnAck, { timeoutMs: 10_000 });
    const first = await submit("hello");
    const recipe = JSON.stringify(approval());
    const deep = `{"recipe":{"document":${recipe},"inputs":{"topic":"x","notes":${nested(8_000)}}}}`;
    expect(await rawErrorCode(subjects.turnSubmit("wedge-3"), deep)).toBe("invalid_request");
    const justTooDeep = `{"text":"hi","recipe":{"document":${recipe},"inputs":{"topic":"x","notes":${nested(MAX_JSON_DEPTH)}}}}`;
    expect(await rawErrorCode(subjects.turnSubmit("wedge-3"), justTooDeep)).toBe("invalid_request");
    expect((await submit("again")).turn_id).toBe(first.turn_id + 1);
  });
});
