import { readFileSync } from "node:fs";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { AuthorizationError, type NatsConnection, PermissionViolationError, RequestError } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InspectionEvent } from "xstate";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { DEV_CREDENTIALS, INBOX_PREFIXES, ROLES, type Role } from "../../src/bus/connection.ts";
import { buckets, streams, subjects } from "../../src/bus/subjects.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { DEFAULT_EVENT_STREAMS, eventStreamNames } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { collectInspection } from "../../src/inspect/collector.ts";
import { createInspectionPublisher } from "../../src/inspect/publisher.ts";
import type { InspectionRecord } from "../../src/inspect/record.ts";
import { DEFAULT_NATS_CONFIG } from "../../src/nats/server.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { SessionStore } from "../../src/runtime/sessionStore.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { settledStatus } from "../helpers/turnStatus.ts";
import { until } from "../helpers/wait.ts";
import { sessionConsumer, walSubject } from "../helpers/wal.ts";

const nats = useNatsServer();

/** Every subject a worker serves (the runner requests them). */
const WORKER_SUBJECTS = [
  "conclave.agent.>",
  "conclave.agent.emotion.stress",
  subjects.schedulerPlan,
  subjects.councilDecide,
  subjects.councilSafety,
  subjects.voiceRender,
  "conclave.critic.safety",
  subjects.memoryRetrieve,
  subjects.memoryCommit,
];

const encoder = new TextEncoder();

/** The PermissionViolationError in an error or its causes, if any. */
function violationIn(error: unknown): PermissionViolationError | null {
  for (let current = error; current; current = (current as { cause?: unknown }).cause) {
    if (current instanceof PermissionViolationError) return current;
  }
  return null;
}

/** Awaits an operation that the server must refuse with a permission violation on `subject`. */
async function denied(operation: Promise<unknown>, subject?: string): Promise<PermissionViolationError> {
  const error = await operation.then(
    () => null,
    (failure: unknown) => failure,
  );
  expect(error, "the operation was allowed").not.toBeNull();
  const violation = violationIn(error);
  expect(violation, `not a permission violation: ${String(error)}`).not.toBeNull();
  if (subject) expect(violation?.subject).toBe(subject);
  return violation!;
}

/** Subscribes and reports the server's refusal, or null when the subscription stands. */
async function subscription(nc: NatsConnection, subject: string, queue?: string) {
  let refusal: Error | null = null;
  let received = 0;
  const sub = nc.subscribe(subject, {
    ...(queue ? { queue } : {}),
    callback: (error) => {
      if (error) refusal = error;
      else received++;
    },
  });
  // The server answers a SUB it refuses with -ERR before the flush's PONG.
  await nc.flush();
  return {
    get refusal(): Error | null {
      return refusal;
    },
    get received() {
      return received;
    },
    unsubscribe: () => sub.unsubscribe(),
  };
}

async function expectSubscriptionDenied(nc: NatsConnection, subject: string, queue?: string) {
  const sub = await subscription(nc, subject, queue);
  expect(sub.refusal, `${subject} was allowed`).toBeInstanceOf(PermissionViolationError);
  expect((sub.refusal as PermissionViolationError | null)?.operation).toBe("subscription");
  return sub;
}

/** Publish violations of plain publishes arrive as connection status errors. */
function violationsOf(nc: NatsConnection): PermissionViolationError[] {
  const seen: PermissionViolationError[] = [];
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "error" && status.error instanceof PermissionViolationError) seen.push(status.error);
    }
  })();
  return seen;
}

async function expectPublishDenied(nc: NatsConnection, seen: PermissionViolationError[], subject: string) {
  nc.publish(subject, encoder.encode("{}"));
  await nc.flush();
  await until(() => seen.some((violation) => violation.operation === "publish" && violation.subject === subject));
}

/** A plain nats.js connection (no Conclave code), closed after the file's tests. */
/** Every answer to `$SRV.<verb>`, collected as a NATS services client does (until 2 s, or a lull after the first). */
async function discover(nc: NatsConnection, verb: "PING" | "INFO" | "STATS"): Promise<unknown[]> {
  const answers: unknown[] = [];
  const replies = await nc.requestMany(`$SRV.${verb}`, new Uint8Array(), { strategy: "stall", maxWait: 2_000 });
  for await (const reply of replies) answers.push(reply.json());
  return answers;
}

const plain: NatsConnection[] = [];
async function connectPlain(options: Record<string, unknown>): Promise<NatsConnection> {
  const nc = await connect({ servers: nats.url, maxReconnectAttempts: 0, ...options });
  plain.push(nc);
  return nc;
}

let runner: Runner;
let worker: WorkerHandle;
const nc = {} as Record<Role, NatsConnection>;
const violations = {} as Record<Role, PermissionViolationError[]>;

beforeAll(async () => {
  for (const role of ROLES) {
    nc[role] = await nats.connect(role);
    violations[role] = violationsOf(nc[role]);
  }
  worker = await startWorker({ nc: nc.worker, agents: builtinAgents("*"), services: [...CORE_SERVICES] });
  runner = await Runner.start(nc.runner);
});

afterAll(async () => {
  await runner?.stop(5_000);
  await worker?.stop();
  await Promise.allSettled(plain.map((connection) => connection.close()));
});

describe("the server configuration", () => {
  it("keeps every user inside an account, with no anonymous user", () => {
    const config = readFileSync(DEFAULT_NATS_CONFIG, "utf8").replace(/#.*$/gm, "");
    expect(config).not.toMatch(/no_auth_user/);
    expect(config).not.toMatch(/^\s*authorization\s*[:{]/m);
    expect(config).toMatch(/accounts\s*\{/);
  });
});

describe("every connection needs valid credentials", () => {
  it.each([
    ["no credentials", {}],
    ["a wrong password", { user: "client", pass: "not-the-password" }],
    ["an unknown user", { user: "mallory", pass: "conclave-dev-client" }],
    ["another role's password", { user: "client", pass: DEV_CREDENTIALS.runner.password }],
  ])("refuses %s", async (_what, credentials) => {
    const error = await connectPlain(credentials).then(
      () => null,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(AuthorizationError);
  });
});

describe("each role can do its job", () => {
  it("runs a turn end to end with the runner, the worker and the client on their own users", async () => {
    const ack = await submitTurn(nc.client, "perm-e2e", { text: "I'm stressed about my deadline" });
    const kinds: string[] = [];
    const completed = await watchTurn(nc.client, ack, (event) => kinds.push(event.kind), 20_000);
    expect(completed.payload.response.length).toBeGreaterThan(0);
    // The worker answered the runner (agents, council, memory), and no stage hit a refusal.
    expect(kinds).toEqual(expect.arrayContaining(["AGENT_COMPLETED", "COUNCIL_DECISION_MADE", "MEMORY_COMMITTED"]));
    const warnings = completed.payload.outcome.status === "PartialSuccess" ? completed.payload.outcome.warnings : [];
    expect(
      warnings.filter((warning) => /permission|no_responders/i.test(`${warning.code} ${warning.message}`)),
    ).toEqual([]);
    // Nothing along the way was refused.
    for (const role of ROLES) expect(violations[role], role).toEqual([]);
  });

  it("lets a plain NATS client (default inbox) submit and get its ack", async () => {
    const client = await connectPlain({ user: "client", pass: DEV_CREDENTIALS.client.password });
    const reply = await client.request(subjects.turnSubmit("perm-plain"), JSON.stringify({ text: "hi" }), {
      timeout: 5_000,
    });
    expect(reply.json()).toMatchObject({ session_id: "perm-plain", turn_id: 1 });
  });

  it("sends a client the error of a rejected fire-and-forget submission", async () => {
    const errors: string[] = [];
    const sub = nc.client.subscribe(subjects.sessionErrors("perm-errors"), {
      callback: (error, msg) => {
        if (!error) errors.push(msg.string());
      },
    });
    await nc.client.flush();
    nc.client.publish(subjects.turnSubmit("perm-errors"), "{not json");
    await until(() => errors.length === 1);
    expect(JSON.parse(errors[0]!)).toMatchObject({ error: { code: "bad_json" } });
    sub.unsubscribe();
  });

  it("lets the observer read the event log, turn status and inspection, and only the operator discover services", async () => {
    const ack = await submitTurn(nc.client, "perm-observed", { text: "hello there" });
    await watchTurn(nc.client, ack, () => {}, 20_000);
    const observer = nc.observer;

    const events = await readEvents(
      jetstream(observer),
      await jetstreamManager(observer),
      "perm-observed",
      ack.turn_id,
    );
    expect(events.at(-1)?.kind).toBe("TURN_COMPLETED");

    const statuses = await TurnStatusStore.open(observer);
    expect(await statuses.get("perm-observed", ack.turn_id)).toMatchObject({ status: "done" });
    expect((await statuses.list("perm-observed")).map((turn) => turn.turn_id)).toEqual([ack.turn_id]);
    const kv = await new Kvm(observer).open(buckets.turns);
    expect((await kv.get(`perm-observed.${ack.turn_id}`))?.json()).toMatchObject({ status: "done" });

    // Services discovery is the operator's (nats.conf, "Replies"): a `$SRV.PING` names its own reply subject.
    await expectPublishDenied(observer, violations.observer, "$SRV.PING");
    violations.observer.length = 0;
    const operator = await connectPlain({
      user: "operator",
      pass: "conclave-dev-operator",
      inboxPrefix: "_INBOX_operator",
    });
    const names = (await discover(operator, "PING")).map((ping) => (ping as { name: string }).name);
    expect(names).toEqual(expect.arrayContaining(["conclave-runner", "conclave-agents", "conclave-council"]));
    const infos = (await discover(operator, "INFO")).length;
    const stats = (await discover(operator, "STATS")).length;
    expect([infos, stats]).toEqual([names.length, names.length]);

    const records: InspectionRecord[] = [];
    const collecting = collectInspection(observer, (record) => records.push(record));
    await observer.flush();
    const publisher = createInspectionPublisher(nc.worker, "worker:perm");
    publisher.next?.({
      type: "@xstate.actor",
      actorRef: { sessionId: "x:0", id: "probe" },
      rootId: "x:0",
    } as unknown as InspectionEvent);
    await until(() => records.length === 1);
    expect(records[0]).toMatchObject({ process: "worker:perm", kind: "actor" });
    collecting.unsubscribe();
    expect(violations.observer).toEqual([]);
  });
});

describe("a worker", () => {
  it("cannot write turn events", async () => {
    await denied(
      jetstream(nc.worker).publish(subjects.turnEvents("perm-w", 1, DEFAULT_EVENT_STREAMS), "{}"),
      subjects.turnEvents("perm-w", 1, DEFAULT_EVENT_STREAMS),
    );
  });

  it("cannot submit turns", async () => {
    await denied(submitTurn(nc.worker, "perm-w", { text: "let me in" }), subjects.turnSubmit("perm-w"));
  });

  it("cannot write the turn WAL, dead letters of other sources, nor errors", async () => {
    await denied(jetstream(nc.worker).publish(walSubject("perm-w"), "{}"), walSubject("perm-w"));
    await denied(jetstream(nc.worker).publish(subjects.deadLetter("submit"), "{}"), subjects.deadLetter("submit"));
    await expectPublishDenied(nc.worker, violations.worker, subjects.sessionErrors("perm-w"));
  });

  it("cannot touch the runner's KV buckets, the WAL's consumer, nor read the event log", async () => {
    await denied(jetstream(nc.worker).publish(`$KV.${buckets.sessions}.counter.perm-w`, "{}"));
    await denied(jetstream(nc.worker).publish(`$KV.${buckets.turns}.perm-w.1`, "{}"));
    await denied(new Kvm(nc.worker).open(buckets.sessions).then((kv) => kv.get("counter.perm-w")));
    await denied(jetstream(nc.worker).consumers.get(streams.turns, sessionConsumer("perm")));
    await denied(readEvents(jetstream(nc.worker), await jetstreamManager(nc.worker), "perm-e2e"));
  });

  it("cannot serve submissions", async () => {
    await expectSubscriptionDenied(nc.worker, subjects.turnSubmitAll, "q");
    await expectSubscriptionDenied(nc.worker, subjects.turnSubmitAll);
  });
});

describe("a client", () => {
  it("cannot answer agent requests: its subscription is refused and no request reaches it", async () => {
    const sub = await expectSubscriptionDenied(nc.client, "conclave.agent.>");
    // Nobody else serves this agent, so the runner's request finds no responder.
    const error = await nc.runner.request("conclave.agent.nobody", "{}", { timeout: 2_000 }).then(
      () => null,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(RequestError);
    expect((error as RequestError).isNoResponders()).toBe(true);
    expect(sub.received).toBe(0);
  });

  it("cannot subscribe to any worker subject, with or without a queue group", async () => {
    for (const subject of WORKER_SUBJECTS) {
      await expectSubscriptionDenied(nc.client, subject);
      await expectSubscriptionDenied(nc.client, subject, "q");
    }
    await expectSubscriptionDenied(nc.client, "$SRV.>");
  });

  it("cannot request workers directly, nor write events, the WAL or dead letters", async () => {
    await denied(nc.client.request(subjects.schedulerPlan, "{}", { timeout: 2_000 }), subjects.schedulerPlan);
    await denied(jetstream(nc.client).publish(subjects.turnEvents("perm-c", 1, DEFAULT_EVENT_STREAMS), "{}"));
    await denied(jetstream(nc.client).publish(walSubject("perm-c"), "{}"));
    await denied(jetstream(nc.client).publish(subjects.deadLetter("submit"), "{}"));
  });

  it("reads only the event log and turn status: not the WAL, dead letters, other KV buckets or memory", async () => {
    const jsm = await jetstreamManager(nc.client);
    await denied(jsm.streams.info(streams.turns));
    await denied(jetstream(nc.client).consumers.get(streams.turns, sessionConsumer("perm")));
    await denied(jetstream(nc.client).consumers.get(streams.deadLetters));
    await denied(jetstream(nc.client).consumers.get(streams.memory));
    await denied(new Kvm(nc.client).open(buckets.sessions).then((kv) => kv.get("counter.perm-e2e")));
    // Turn status is readable (the client API's status/turns), not writable.
    const statuses = await new Kvm(nc.client).open(buckets.turns);
    expect((await statuses.get("perm-e2e.1"))?.json<{ status: string }>().status).toBe("done");
    await denied(statuses.put("perm-c.1", "{}"), `$KV.${buckets.turns}.perm-c.1`);
  });

  it("cannot delete, purge or reconfigure streams", async () => {
    const jsm = await jetstreamManager(nc.client);
    for (const stream of eventStreamNames(DEFAULT_EVENT_STREAMS)) {
      await denied(jsm.streams.purge(stream));
      await denied(jsm.streams.delete(stream));
    }
    await denied(jsm.streams.add({ name: "PERM_STREAM", subjects: ["conclave.perm.>"] }));
    await denied(jsm.consumers.delete(streams.turns, sessionConsumer("perm")));
  });
});

describe("the observer", () => {
  it("cannot write turn status, nor any other KV bucket", async () => {
    const kv = await new Kvm(nc.observer).open(buckets.turns);
    await denied(kv.put("perm-o.1", "{}"), `$KV.${buckets.turns}.perm-o.1`);
    await denied(kv.delete("perm-e2e.1"));
    await denied(jetstream(nc.observer).publish(`$KV.${buckets.sessions}.counter.perm-o`, "{}"));
  });

  it("cannot write events, submit turns, or publish inspection records", async () => {
    await denied(jetstream(nc.observer).publish(subjects.turnEvents("perm-o", 1, DEFAULT_EVENT_STREAMS), "{}"));
    await denied(submitTurn(nc.observer, "perm-o", { text: "hi" }));
    await expectPublishDenied(nc.observer, violations.observer, "conclave.inspect.observer:1");
  });

  it("cannot serve or snoop on requests", async () => {
    await expectSubscriptionDenied(nc.observer, "conclave.agent.>");
    await expectSubscriptionDenied(nc.observer, subjects.turnSubmitAll);
    await expectSubscriptionDenied(nc.observer, "$SRV.>");
    await expectSubscriptionDenied(nc.observer, "conclave.errors.*");
  });

  it("reads the dead letters, but not the WAL, memory or the other buckets", async () => {
    const jsm = await jetstreamManager(nc.observer);
    expect((await jsm.streams.info(streams.deadLetters)).config.name).toBe(streams.deadLetters);
    await denied(jsm.streams.purge(streams.deadLetters));
    await denied(jetstream(nc.observer).publish(subjects.deadLetter("observer"), "{}"));
    await denied(jetstream(nc.observer).consumers.get(streams.turns, sessionConsumer("perm")));
    await denied(jetstream(nc.observer).consumers.get(streams.memory));
    await denied(new Kvm(nc.observer).open(buckets.sessions).then((kv) => kv.get("counter.perm-e2e")));
    await denied(new Kvm(nc.observer).open(buckets.scheduler).then((kv) => kv.get("perm-e2e")));
  });
});

describe("the runner", () => {
  it("cannot serve worker subjects", async () => {
    await expectSubscriptionDenied(nc.runner, "conclave.agent.>");
    await expectSubscriptionDenied(nc.runner, subjects.councilDecide, "q");
  });

  it("cannot write the memory worker's episodes (scheduler cooldowns it may: it can host the scheduler)", async () => {
    await denied(jetstream(nc.runner).publish(subjects.memoryEpisode("perm-r", 1), "{}"));
  });
  it("answers a submission only on an inbox: a reply subject naming a KV key is not written", async () => {
    const sessions = await SessionStore.open(nc.runner);
    // A key nothing else writes after one turn: a checkpoint is saved every 10 turns.
    const target = `$KV.${buckets.sessions}.checkpoint.perm-hijack`;
    nc.client.publish(subjects.turnSubmit("perm-hijack"), JSON.stringify({ text: "hi" }), { reply: target });
    expect((await settledStatus(nc.runner, "perm-hijack", 1)).status).toBe("done");
    expect(await sessions.checkpoint("perm-hijack")).toBeNull();
  });
});

describe("inbox prefixes", () => {
  it("give each role its own prefix", () => {
    expect(new Set(Object.values(INBOX_PREFIXES)).size).toBe(ROLES.length);
  });

  it.each(ROLES)("are private: %s cannot subscribe under another role's prefix", async (role) => {
    for (const other of ROLES) {
      const prefix = `${INBOX_PREFIXES[other]}.>`;
      if (other === role) {
        const own = await subscription(nc[role], prefix);
        expect(own.refusal).toBeNull();
        own.unsubscribe();
      } else {
        await expectSubscriptionDenied(nc[role], prefix);
      }
    }
    // The library default belongs to the client role (plain NATS clients).
    if (role !== "client") await expectSubscriptionDenied(nc[role], "_INBOX.>");
    await expectSubscriptionDenied(nc[role], ">");
  });

  it("refuse a role's requests made with another role's prefix", async () => {
    const runnerAsClient = await connectPlain({
      user: "runner",
      pass: DEV_CREDENTIALS.runner.password,
      inboxPrefix: INBOX_PREFIXES.client,
    });
    await denied(runnerAsClient.request("conclave.agent.emotion.stress", "{}", { timeout: 2_000 }));
  });
});
