import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { AGENTS } from "../../agents/index.ts";
import { eventStreamOf, subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { neutralModulators, neutralStance, SENSOR_NAMES, type Sensors } from "../../src/contracts/workspace.ts";
import { DEFAULT_EVENT_STREAMS } from "../../src/eventlog/eventStreams.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { until } from "../helpers/wait.ts";
import {
  CONTROL,
  expectAnswered,
  expectErrorReply,
  letterCount,
  lettersFor,
  liveness,
  NEWLINE_JSON,
  sha256,
} from "./hostileHelpers.ts";

/**
 * A hostile client against a real stack (runner and workers as processes):
 * nothing it sends ends a process, everything is answered or dead-lettered,
 * and an ordinary turn still completes afterwards with no process restarted.
 * Forbidden publishes and subscriptions per role are in permissions.test.ts
 * and roles.test.ts; poisoned stored values in poisonedStore.test.ts; a model
 * answering nonsense in badModel.test.ts.
 */
const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let stack: ConclaveProcess[] = [];
let before: ReturnType<typeof liveness>;
let client: NatsConnection;
let runnerRole: NatsConnection;
let observer: NatsConnection;

const AGENT_ID = [...AGENTS.keys()][0]!;
const sensors = Object.fromEntries(SENSOR_NAMES.map((name) => [name, 0.2])) as Sensors;
const agentRequest = (session: string) => ({
  session_id: session,
  turn_id: 1,
  agent_id: AGENT_ID,
  wave: 0,
  mode: "respond",
  round: 0,
  timeout_ms: 2_000,
  context: {
    user_message: "hello",
    sensors,
    modulators: neutralModulators(),
    stance: neutralStance(),
    claims: [],
    episodes: [],
  },
});

beforeAll(async () => {
  stack = await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "*"]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("runner", ["runner"]),
  ]);
  before = liveness(stack);
  [client, runnerRole, observer] = await Promise.all([
    nats.connect("client"),
    nats.connect("runner"),
    nats.connect("observer"),
  ]);
});

async function normalTurnCompletes(session: string): Promise<void> {
  const ack = await submitTurn(client, session, { text: "I'm stressed about my deadline" });
  const completed = await watchTurn(client, ack, () => {}, 30_000);
  expect(completed.payload.outcome.status).toBe("Complete");
  expect(completed.payload.response.length).toBeGreaterThan(0);
}

const expectNoRestart = () => {
  const now = liveness(stack);
  expect(now).toEqual(before);
  for (const p of now) expect(p.exitCode, `${p.name} exited`).toBeNull();
};

describe("newline-bearing invalid requests (the finding)", () => {
  it("seven in a row on conclave.turn.submit.<session>: each gets a one-line bad_json reply", async () => {
    for (let i = 0; i < 7; i++) {
      const reply = await client.request(subjects.turnSubmit("hostile-nl"), NEWLINE_JSON, { timeout: 5_000 });
      expect(expectErrorReply(reply).error.code).toBe("bad_json");
    }
  });

  it("seven in a row on an agent subject: each gets a one-line bad_json reply", async () => {
    for (let i = 0; i < 7; i++) {
      const reply = await runnerRole.request(subjects.agent(AGENT_ID), NEWLINE_JSON, { timeout: 5_000 });
      expect(expectErrorReply(reply).error.code).toBe("bad_json");
    }
  });

  it("then a normal turn completes, and no process restarted", async () => {
    await normalTurnCompletes("hostile-after-nl");
    expectNoRestart();
  });

  it("kept them as dead letters: redacted (hash and length, no payload), one-line reasons", async () => {
    const subject = subjects.turnSubmit("hostile-nl");
    await until(async () => (await lettersFor(observer, "submit", subject)).length >= 7, {
      what: "7 submit dead letters",
      timeoutMs: 10_000,
    });
    const letters = await lettersFor(observer, "submit", subject);
    expect(letters).toHaveLength(7);
    for (const letter of letters) {
      expect(letter).toMatchObject({ code: "bad_json", redacted: true, data: "", bytes: NEWLINE_JSON.length });
      expect(letter.sha256).toBe(sha256(NEWLINE_JSON));
      expect(letter.reason).not.toMatch(/[\r\n]/);
    }
  });
});

describe("control characters, invalid UTF-8, oversize and wrong types", () => {
  const fields = ["text", "user_id", "idempotency_key", "on_busy"] as const;
  const submissions: [string, string | Uint8Array][] = [
    ...fields.map((field): [string, string] => [
      `control characters in ${field}`,
      JSON.stringify({ text: "hello", [field]: CONTROL }),
    ]),
    ...fields.map((field): [string, string] => [`a number in ${field}`, JSON.stringify({ text: "hi", [field]: 5 })]),
    ...fields.map((field): [string, string] => [`an object in ${field}`, JSON.stringify({ text: "hi", [field]: {} })]),
    ["control characters in a key", JSON.stringify({ text: "hi", [CONTROL]: CONTROL })],
    ["an array", "[1,2,3]"],
    ["null", "null"],
    ["a bare string with control characters", JSON.stringify(CONTROL)],
    ["raw control characters", CONTROL],
    [
      "invalid UTF-8",
      new Uint8Array([0x7b, 0x22, 0x74, 0x65, 0x78, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x22, 0x7d]),
    ],
    ["oversize", JSON.stringify({ text: `${CONTROL}x`.repeat(8_000) })],
    ["empty", ""],
  ];

  it.each(submissions)("a submission with %s is answered", async (_name, data) => {
    const reply = await client.request(subjects.turnSubmit("hostile-ctl"), data, { timeout: 5_000 });
    expectAnswered(reply);
  });

  const agentCases: [string, unknown][] = [
    ["control characters in agent_id", { ...agentRequest("hostile-ctl"), agent_id: CONTROL }],
    ["control characters in session_id", { ...agentRequest("hostile-ctl"), session_id: CONTROL }],
    ["control characters in the user message", { ...agentRequest("hostile-ctl"), context: { user_message: CONTROL } }],
    ["a string for turn_id", { ...agentRequest("hostile-ctl"), turn_id: "one\ntwo" }],
  ];

  it.each(agentCases)("an agent request with %s gets a one-line error reply", async (_name, body) => {
    const reply = await runnerRole.request(subjects.agent(AGENT_ID), JSON.stringify(body), { timeout: 5_000 });
    expectErrorReply(reply);
  });

  const watchCases: [string, string | Uint8Array][] = [
    ["a newline-bearing invalid body", NEWLINE_JSON],
    ["control characters in turn_id", JSON.stringify({ turn_id: CONTROL })],
    ["a string for follow", JSON.stringify({ follow: "yes\nplease" })],
    ["a negative timeout", JSON.stringify({ timeout_ms: -1 })],
    ["invalid UTF-8", new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x7d])],
    ["raw control characters", CONTROL],
  ];

  it.each(watchCases)("a watch request with %s gets a one-line error reply", async (_name, data) => {
    const reply = await client.request(subjects.turnWatch("hostile-ctl"), data, { timeout: 5_000 });
    expectErrorReply(reply);
  });

  it("leaves every process running, and a normal turn completes", async () => {
    await normalTurnCompletes("hostile-after-ctl");
    expectNoRestart();
  });
});

describe("a push consumer aimed at a worker's subject", () => {
  it("is not served and fills no dead letters: the worker answers requests only", async () => {
    const agentSubject = subjects.agent(AGENT_ID);
    await normalTurnCompletes("hostile-before-push");
    const jsm = await jetstreamManager(client);
    // The session's stream of the event log (the runner made it with the default count).
    const eventLog = eventStreamOf("hostile-before-push", DEFAULT_EVENT_STREAMS);
    const stored = (await jsm.streams.info(eventLog)).state.messages;
    expect(stored).toBeGreaterThan(10);
    const lettersBefore = await letterCount(runnerRole, "worker");
    // The client may create consumers on the event log; nats-server does not check where they deliver.
    const consumer = await jsm.consumers.add(eventLog, {
      durable_name: "hostile-push",
      deliver_subject: agentSubject,
      // The services' queue group: without it, queue subscribers are no interest to a push consumer.
      deliver_group: "q",
      ack_policy: "none" as never,
      deliver_policy: "all" as never,
    });
    await until(async () => (await jsm.consumers.info(eventLog, consumer.name)).delivered.stream_seq >= stored, {
      what: "every event delivered to the agent subject",
      timeoutMs: 10_000,
    });
    await jsm.consumers.delete(eventLog, consumer.name);
    // One real bad request after the deliveries: its dead letter marks that the worker got past them.
    expectErrorReply(await runnerRole.request(agentSubject, "{", { timeout: 5_000 }));
    await until(async () => (await letterCount(runnerRole, "worker")) > lettersBefore, {
      what: "the marker's dead letter",
      timeoutMs: 10_000,
    });
    expect(await letterCount(runnerRole, "worker")).toBe(lettersBefore + 1);
    await normalTurnCompletes("hostile-after-push");
    expectNoRestart();
  });
});

describe("a flood of bad submissions", () => {
  it("is answered in full but dead-lettered at a bounded rate", async () => {
    const subject = subjects.turnSubmit("hostile-flood");
    const FLOOD = 300;
    const replies = await Promise.all(
      Array.from({ length: FLOOD }, () => client.request(subject, NEWLINE_JSON, { timeout: 10_000 })),
    );
    for (const reply of replies) expect(expectErrorReply(reply).error.code).toBe("bad_json");
    // A marker on another subject, dead-lettered after the flood's.
    const marker = subjects.turnSubmit("hostile-flood-marker");
    expectErrorReply(await client.request(marker, "{", { timeout: 5_000 }));
    await until(async () => (await lettersFor(observer, "submit", marker)).length === 1, {
      what: "the marker's dead letter",
      timeoutMs: 10_000,
    });
    const flood = await lettersFor(observer, "submit", subject);
    expect(flood.length).toBeGreaterThan(0);
    expect(flood.length).toBeLessThan(FLOOD / 3);
    expectNoRestart();
  });
});
