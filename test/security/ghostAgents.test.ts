import type { NatsConnection } from "@nats-io/nats-core";
import { PermissionViolationError } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import {
  AgentAnnouncement,
  DEFAULT_HEARTBEAT_MS,
  MAX_HEARTBEAT_MS,
  MIN_HEARTBEAT_MS,
} from "../../src/agents/announcement.ts";
import { AgentDirectory } from "../../src/agents/directory.ts";
import { encodeJson } from "../../src/bus/codec.ts";
import { subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { AgentManifest } from "../../src/contracts/agent.ts";
import type { TurnOutcome } from "../../src/contracts/turn.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { eventually } from "../helpers/wait.ts";
import { liveness } from "./hostileHelpers.ts";

/**
 * Ghost agents: an agent announced once with a heartbeat of 2^53-1 ms was
 * never forgotten by the runners' directories (it expires three heartbeats
 * after its last announcement), so every later turn planned it and got
 * `no_responders`, while `conclave agents`, calling the workers' roll, did not
 * list it: its worker never answers. Heartbeats are now bounded, and
 * `conclave agents` lists what a runner plans with.
 */
const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);

const ghost = (id: string, priority: AgentManifest["priority"] = "ALWAYS_ON"): AgentManifest => ({
  id,
  agency: "ghost",
  priority,
  triggers: [],
  cooldown_s: 0,
  token_budget: 0,
  description: "announced, never served",
});

/** The heartbeat the ghost announces once: in range, so it is forgotten three heartbeats later. */
const GHOST_HEARTBEAT_MS = 10_000;

const announcement = (worker: string, agents: AgentManifest[], heartbeat_ms: number) =>
  ({ worker, agents, tools: [], heartbeat_ms }) satisfies AgentAnnouncement;

/** Publishes one announcement, as a worker that then goes silent (no heartbeats, no roll-call answers). */
async function announceOnce(worker: NatsConnection, body: unknown): Promise<void> {
  worker.publish(subjects.agentsAnnounce, encodeJson(body));
  await worker.flush();
}

/** The agent ids `conclave agents --json` lists, with its stderr. */
async function listed(): Promise<{ ids: string[]; stderr: string }> {
  const result = await runConclave(nats.url, ["agents", "--json"]);
  expect(result.code, result.stderr).toBe(0);
  const ids = result.stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as { id?: string })
    .flatMap((entry) => (entry.id ? [entry.id] : []));
  return { ids, stderr: result.stderr };
}

describe("heartbeat bounds", () => {
  it("refuse an announcement whose heartbeat would keep its agents for ever", () => {
    const forever = announcement("w-forever", [ghost("ghost.forever")], 9_007_199_254_740_991);
    expect(AgentAnnouncement.safeParse(forever).success).toBe(false);
    expect(AgentAnnouncement.safeParse({ ...forever, heartbeat_ms: MAX_HEARTBEAT_MS + 1 }).success).toBe(false);
    expect(AgentAnnouncement.safeParse({ ...forever, heartbeat_ms: MIN_HEARTBEAT_MS - 1 }).success).toBe(false);
    for (const heartbeat_ms of [MIN_HEARTBEAT_MS, DEFAULT_HEARTBEAT_MS, MAX_HEARTBEAT_MS])
      expect(AgentAnnouncement.safeParse({ ...forever, heartbeat_ms }).success).toBe(true);
  });

  it("a directory ignores it and says why, in one line", async () => {
    const problems: string[] = [];
    const listener = await nats.connect("runner");
    const directory = await AgentDirectory.open(listener, {
      onInvalid: (message) => problems.push(message),
      quietMs: 20,
    });
    try {
      await announceOnce(
        await nats.connect("worker"),
        announcement("w-forever", [ghost("ghost.forever")], 9_007_199_254_740_991),
      );
      await listener.flush();
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/heartbeat_ms/);
      expect(problems[0]).not.toMatch(/[\r\n]/);
      expect(directory.manifest("ghost.forever")).toBeUndefined();
    } finally {
      directory.close();
    }
  });
});

describe("`conclave agents` with no runner up", () => {
  beforeAll(async () => {
    await processes.spawn("agents", ["worker", "--agents", "*"]);
  });

  it("calls the workers' roll instead, and says so", async () => {
    const result = await runConclave(nats.url, ["agents"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/roster: the workers' answers to a roll call .*no runner is up/);
    expect(result.stdout).toMatch(/emotion\./);
  });
});

describe("a ghost agent against a running stack", () => {
  let stack: ConclaveProcess[] = [];
  let client: NatsConnection;
  let worker: NatsConnection;
  beforeAll(async () => {
    stack = await Promise.all([
      processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
      processes.spawn("runner", ["runner"]),
    ]);
    [client, worker] = await Promise.all([nats.connect("client"), nats.connect("worker")]);
  });

  const turn = async (session: string): Promise<TurnOutcome> =>
    (await watchTurn(client, await submitTurn(client, session, { text: "I'm stressed about my deadline" }), () => {}))
      .payload.outcome;
  const ghostWarnings = (outcome: TurnOutcome, id: string) =>
    outcome.status === "PartialSuccess" ? outcome.warnings.filter((warning) => warning.subject === id) : [];

  it("only runners may answer roster requests: a worker cannot serve conclave.agents.roster", async () => {
    let refusal: unknown = null;
    const sub = worker.subscribe(subjects.agentsRoster, {
      callback: (error) => {
        if (error) refusal = error;
      },
    });
    await worker.flush();
    sub.unsubscribe();
    expect(refusal).toBeInstanceOf(PermissionViolationError);
  });

  it("the runner refuses the ghost of an unbounded heartbeat: `conclave agents` never lists it", async () => {
    await announceOnce(worker, announcement("w-forever", [ghost("ghost.forever")], 9_007_199_254_740_991));
    // Published after it on the same connection: once the runner lists this one, it has seen the other.
    // (SCHEDULED with no triggers: never planned, so it leaves turns alone.)
    await announceOnce(worker, announcement("w-marker", [ghost("ghost.marker", "SCHEDULED")], MAX_HEARTBEAT_MS));
    const seen = await listed();
    expect(seen.ids).toContain("ghost.marker");
    expect(seen.ids).not.toContain("ghost.forever");
  });

  it("lists an agent announced once while the runner plans with it, and neither does once it expired", async () => {
    const before = liveness(stack);
    // In range, and long enough (forgotten 30 s after this one announcement) to be seen by both first.
    await announceOnce(worker, announcement("w-once", [ghost("ghost.once")], GHOST_HEARTBEAT_MS));
    // The roster conclave agents shows is the one turns are planned with: both have the ghost.
    const [shown, planned] = await Promise.all([listed(), turn("ghost-while-live")]);
    expect(shown.ids).toContain("ghost.once");
    expect(planned.status).toBe("PartialSuccess");
    expect(ghostWarnings(planned, "ghost.once")).toEqual([
      expect.objectContaining({ stage: "agents", code: "no_responders" }),
    ]);
    // Three heartbeats after its one announcement the runner forgets it, and conclave agents with it.
    const gone = await eventually(listed, (now) => !now.ids.includes("ghost.once"), {
      timeoutMs: 60_000,
      everyMs: 1_000,
    });
    expect(gone.ids).not.toContain("ghost.once");
    // So does the scheduler: a normal turn completes.
    let session = 0;
    const after = await eventually(
      () => turn(`ghost-after-${++session}`),
      (outcome) => outcome.status === "Complete",
      { timeoutMs: 20_000, everyMs: 200 },
    );
    expect(after.status).toBe("Complete");
    expect(liveness(stack)).toEqual(before);
  }, 120_000);

  it("says in stderr (without --json) that the list is the runner's", async () => {
    const result = await runConclave(nats.url, ["agents"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/roster: runner .*'s, what its turns are planned with \(conclave\.agents\.roster\)/);
    expect(result.stdout).toMatch(/emotion\./);
  });
});
