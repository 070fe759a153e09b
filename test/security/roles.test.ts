import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { type NatsConnection, PermissionViolationError } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { AGENTS } from "../../agents/index.ts";
import { ROLES, type Role } from "../../src/bus/connection.ts";
import { buckets, eventStreamOf, subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { watchTurn } from "../../src/client/turns.ts";
import { TurnAck } from "../../src/contracts/turn.ts";
import { DEFAULT_EVENT_STREAMS } from "../../src/eventlog/eventStreams.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { settledStatus } from "../helpers/turnStatus.ts";
import { until } from "../helpers/wait.ts";
import { walSubject } from "../helpers/wal.ts";
import { liveness, violationsOf } from "./hostileHelpers.ts";

/**
 * Every role against the subjects it must not touch, on a real stack: each
 * forbidden publish and subscription is refused by nats-server, no role that
 * should only read can make another role write (services discovery and
 * forged reply subjects), and every process is still running afterwards.
 */
const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let stack: ConclaveProcess[] = [];
const nc = {} as Record<Role, NatsConnection>;
const violations = {} as Record<Role, PermissionViolationError[]>;
const encoder = new TextEncoder();

beforeAll(async () => {
  stack = await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "*"]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("runner", ["runner"]),
  ]);
  for (const role of ROLES) {
    nc[role] = await nats.connect(role);
    violations[role] = violationsOf(nc[role]);
  }
});

const AGENT = subjects.agent([...AGENTS.keys()][0]!);
const DISCOVERY = ["$SRV.PING", "$SRV.INFO", "$SRV.STATS", "$SRV.PING.conclave-runner"];
const RUNNER_DATA = [
  subjects.turnEvents("hostile", 1, DEFAULT_EVENT_STREAMS),
  walSubject("hostile"),
  `$KV.${buckets.sessions}.counter.hostile`,
  `$KV.${buckets.turns}.hostile.1`,
  subjects.deadLetter("submit"),
];
const WORKER_DATA = [subjects.memoryEpisode("hostile", 1), `$KV.${buckets.scheduler}.hostile`];
/** The schedule log and its fire claims: runners write them; a schedule is changed only through a runner's checks. */
const SCHEDULE_DATA = [subjects.scheduleLog("hostile"), `$KV.${buckets.scheduleFires}.hostile.1`];

const FORBIDDEN_PUBLISH: Record<Role, string[]> = {
  client: [
    ...DISCOVERY,
    ...RUNNER_DATA,
    ...WORKER_DATA,
    ...SCHEDULE_DATA,
    AGENT,
    "_INBOX_runner.forged",
    "_INBOX_observer.forged",
  ],
  observer: [
    ...DISCOVERY,
    ...RUNNER_DATA,
    ...WORKER_DATA,
    ...SCHEDULE_DATA,
    AGENT,
    subjects.turnSubmit("hostile"),
    subjects.sessionErrors("hostile"),
    "_INBOX_runner.forged",
    "_INBOX_client.forged",
  ],
  worker: [
    ...DISCOVERY,
    ...RUNNER_DATA,
    ...SCHEDULE_DATA,
    subjects.turnSubmit("hostile"),
    AGENT,
    "_INBOX_client.forged",
  ],
  // The runner answers workers' tool-gate requests (conclave.toolgate.*) and the observer's roster requests
  // (conclave.agents.roster), so it may reply on their inboxes; it announces no agents.
  // It may keep the scheduler's cooldowns (`conclave runner --cognition runner` hosts the scheduler); not episodes.
  runner: [...DISCOVERY, subjects.memoryEpisode("hostile", 1), subjects.agentsAnnounce],
};

const FORBIDDEN_SUBSCRIBE: Record<Role, string[]> = {
  client: [
    "_INBOX_runner.>",
    "_INBOX_worker.>",
    "_INBOX_observer.>",
    "$SRV.>",
    AGENT,
    subjects.turnSubmitAll,
    subjects.scheduleManage,
    ">",
  ],
  observer: ["_INBOX_runner.>", "_INBOX_client.>", "$SRV.>", AGENT, subjects.turnSubmitAll, subjects.allEvents],
  worker: ["_INBOX_runner.>", "_INBOX_client.>", subjects.turnSubmitAll, subjects.allEvents, subjects.allWal],
  runner: ["_INBOX_worker.>", "_INBOX_client.>", "_INBOX_observer.>", AGENT, subjects.allEpisodes],
};

describe.each(ROLES)("the %s role", (role) => {
  it.each(FORBIDDEN_PUBLISH[role])("may not publish %s", async (subject) => {
    nc[role].publish(subject, encoder.encode("{}"));
    await nc[role].flush();
    await until(() => violations[role].some((v) => v.operation === "publish" && v.subject === subject), {
      what: `a refused publish to ${subject}`,
      timeoutMs: 10_000,
    });
  });

  it.each(FORBIDDEN_SUBSCRIBE[role])("may not subscribe to %s", async (subject) => {
    let refusal: unknown = null;
    const sub = nc[role].subscribe(subject, {
      callback: (error) => {
        if (error) refusal = error;
      },
    });
    // The server answers a SUB it refuses with -ERR before the flush's PONG.
    await nc[role].flush();
    sub.unsubscribe();
    expect(refusal, `${role} subscribed to ${subject}`).toBeInstanceOf(PermissionViolationError);
  });
});

describe("forged reply subjects", () => {
  it("a submission whose reply names a data subject is run, but nothing is written there", async () => {
    const victimEvents = subjects.turnEvents("hostile-victim", 1, DEFAULT_EVENT_STREAMS);
    const victimKey = `$KV.${buckets.sessions}.counter.hostile-victim`;
    for (const reply of [victimEvents, victimKey]) {
      // The client asks for the ack to go where only the runner may write; it follows the turn by its status instead.
      nc.client.publish(subjects.turnSubmit("hostile-forger"), JSON.stringify({ text: "hello" }), { reply });
    }
    // Its own turns are told apart by a request with a real inbox, submitted last on the same session.
    const last = TurnAck.parse(
      (
        await nc.client.request(subjects.turnSubmit("hostile-forger"), JSON.stringify({ text: "hi" }), {
          timeout: 5_000,
        })
      ).json(),
    );
    await watchTurn(nc.client, last, () => {}, 30_000);
    // The two forged submissions ran too: the session has three turns. Which got which id is not fixed: the
    // request was once numbered 2 in a loaded full run (the three are handled at once, not one by one).
    for (const turnId of [1, 2, 3])
      expect((await settledStatus(nc.runner, "hostile-forger", turnId)).status, `turn ${turnId}`).toBe("done");
    const jsm = await jetstreamManager(nc.runner);
    const info = await jsm.streams.info(eventStreamOf("hostile-victim", DEFAULT_EVENT_STREAMS), {
      subjects_filter: subjects.sessionEvents("hostile-victim", DEFAULT_EVENT_STREAMS),
    });
    expect(info.state.subjects ?? {}).toEqual({});
    const kv = await new Kvm(nc.runner).create(buckets.sessions, { history: 1 });
    expect(await kv.get("counter.hostile-victim")).toBeNull();
  });

  it("left every process running", () => {
    for (const p of liveness(stack)) expect(p.exitCode, `${p.name} exited`).toBeNull();
  });
});
