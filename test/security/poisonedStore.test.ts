import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { buckets, subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { DEFAULT_EVENT_STREAMS } from "../../src/eventlog/eventStreams.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { until } from "../helpers/wait.ts";
import { expectErrorReply, lettersFor, liveness, sha256 } from "./hostileHelpers.ts";

/**
 * Stored values that fail their schema (damaged, or forged by whoever could
 * write the bucket): each is quarantined (a `conclave.dlq.kv` dead letter
 * names it, the value stays for the operator), only the session it belongs
 * to is affected, and no process ends.
 */
const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let stack: ConclaveProcess[] = [];
let before: ReturnType<typeof liveness>;
let client: NatsConnection;
let runnerRole: NatsConnection;
let workerRole: NatsConnection;
let observer: NatsConnection;

beforeAll(async () => {
  stack = await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "*"]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("runner", ["runner"]),
  ]);
  before = liveness(stack);
  [client, runnerRole, workerRole, observer] = await Promise.all([
    nats.connect("client"),
    nats.connect("runner"),
    nats.connect("worker"),
    nats.connect("observer"),
  ]);
});

const TEXT = "I'm stressed about my deadline";
const turn = async (session: string) => {
  const ack = await submitTurn(client, session, { text: TEXT });
  return (await watchTurn(client, ack, () => {}, 30_000)).payload;
};

const expectQuarantined = async (bucket: string, key: string, value: string) => {
  const subject = `$KV.${bucket}.${key}`;
  await until(async () => (await lettersFor(observer, "kv", subject)).length > 0, {
    what: `a dead letter for ${subject}`,
    timeoutMs: 10_000,
  });
  const letters = await lettersFor(observer, "kv", subject);
  expect(letters).toHaveLength(1); // once per stored revision, however often it is read
  expect(letters[0]).toMatchObject({ code: "corrupt_value", redacted: true, bytes: value.length });
  expect(letters[0]?.sha256).toBe(sha256(value));
  expect(letters[0]?.reason).toMatch(new RegExp(`${bucket}/${key.replace(".", "\\.")} .*unreadable`));
  expect(letters[0]?.reason).not.toMatch(/[\r\n]/);
};

describe("a poisoned value in the scheduler's cooldowns", () => {
  it("is quarantined and replaced: the session's turn completes", async () => {
    const value = '{"emotion.stress":\n"soon"}';
    const kv = await new Kvm(workerRole).create(buckets.scheduler, { history: 1 });
    await kv.put("hostile-cool", value);
    expect((await turn("hostile-cool")).outcome.status).toBe("Complete");
    await expectQuarantined(buckets.scheduler, "hostile-cool", value);
    // Cooldowns are soft state: the scheduler's save wrote a valid record over it.
    const healed = await kv.get("hostile-cool");
    expect(healed?.string()).not.toBe(value);
    expect(typeof healed?.json()).toBe("object");
  });
});

describe("a poisoned turn counter", () => {
  it("fails that session's submissions with a one-line error, and no other session's", async () => {
    const value = '{"last_turn_id":\n"forged"}';
    const kv = await new Kvm(runnerRole).create(buckets.sessions, { history: 1 });
    await kv.put("counter.hostile-counter", value);
    for (let i = 0; i < 3; i++) {
      const reply = await client.request(subjects.turnSubmit("hostile-counter"), JSON.stringify({ text: TEXT }), {
        timeout: 5_000,
      });
      expect(expectErrorReply(reply).error.message).toMatch(/counter\.hostile-counter .*unreadable/);
    }
    await expectQuarantined(buckets.sessions, "counter.hostile-counter", value);
    // Kept, not deleted: a counter started afresh would hand out turn ids already used.
    expect((await kv.get("counter.hostile-counter"))?.string()).toBe(value);
    expect((await turn("hostile-counter-neighbour")).outcome.status).toBe("Complete");
    expect(liveness(stack)).toEqual(before);
  });
});

describe("a poisoned session snapshot", () => {
  it("fails that session's turn with corrupt_value in its log, and is quarantined", async () => {
    const value = '{"turns_completed":"many",\n"modulators":null}';
    const kv = await new Kvm(runnerRole).create(buckets.sessions, { history: 1 });
    await kv.put("snapshot.hostile-snap", value);
    const outcome = (await turn("hostile-snap")).outcome;
    expect(outcome).toMatchObject({ status: "Failed", error: { code: "corrupt_value" } });
    expect(outcome.status === "Failed" && outcome.error.message).not.toMatch(/[\r\n]/);
    await expectQuarantined(buckets.sessions, "snapshot.hostile-snap", value);
    expect((await turn("hostile-snap-neighbour")).outcome.status).toBe("Complete");
    expect(liveness(stack)).toEqual(before);
  });
});

describe("a forged episode in memory", () => {
  it("is left out of retrieval: the session's next turn completes", async () => {
    expect((await turn("hostile-mem")).outcome.status).toBe("Complete");
    // Stored as turn 1's episode after the real one: what retrieval for turn 2 reads.
    await jetstream(workerRole).publish(subjects.memoryEpisode("hostile-mem", 1), '{"session_id":\n5}');
    expect((await turn("hostile-mem")).outcome.status).toBe("Complete");
    expect(liveness(stack)).toEqual(before);
  });
});

describe("a poisoned lease", () => {
  it("is reported, and the session's turn runs once the lease lapses (leases expire by themselves)", async () => {
    const value = '{"runner":\n5}';
    const kv = await new Kvm(runnerRole).create(buckets.owners, { history: 1 });
    await kv.put("hostile-lease", value);
    expect((await turn("hostile-lease")).outcome.status).toBe("Complete");
    await expectQuarantined(buckets.owners, "hostile-lease", value);
    expect(liveness(stack)).toEqual(before);
  });
});

describe("a poisoned idempotency reservation", () => {
  it("fails a retry with that key with a one-line error; the session's other submissions run", async () => {
    const first = await submitTurn(client, "hostile-idem", { text: TEXT, idempotency_key: "k-1" });
    await watchTurn(client, first, () => {}, 30_000);
    const kv = await new Kvm(runnerRole).create(buckets.sessions, { history: 1 });
    const keys: string[] = [];
    for await (const key of await kv.keys("idem.hostile-idem.>")) keys.push(key);
    expect(keys).toHaveLength(1);
    const value = '{"turn_id":\n"forged"}';
    await kv.put(keys[0]!, value);
    const retry = await client.request(
      subjects.turnSubmit("hostile-idem"),
      JSON.stringify({ text: TEXT, idempotency_key: "k-1" }),
      { timeout: 5_000 },
    );
    expect(expectErrorReply(retry).error.message).toMatch(/unreadable/);
    await expectQuarantined(buckets.sessions, keys[0]!, value);
    expect((await turn("hostile-idem")).outcome.status).toBe("Complete");
    expect(liveness(stack)).toEqual(before);
  });
});

describe("a forged first event in the log", () => {
  it("(what a $SRV.PING answer written into the log looked like) does not stall the session's turn", async () => {
    const forged = JSON.stringify({ type: "io.nats.micro.v1.ping_response", name: "conclave-runner", id: "x" });
    await jetstream(runnerRole).publish(subjects.turnEvents("hostile-forged-event", 1, DEFAULT_EVENT_STREAMS), forged);
    expect((await turn("hostile-forged-event")).outcome.status).toBe("Complete");
    expect(liveness(stack)).toEqual(before);
  });
});
