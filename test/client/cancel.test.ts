import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { defaultTurnPolicy } from "../../machines/turn/context.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { isConclaveError } from "../../src/errors.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { eventually } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const run = promisify(execFile);
let client: ConclaveClient;
let observer: NatsConnection;

beforeAll(async () => {
  await Promise.all([
    processes.spawn("builtins", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("slow", ["worker", "--agents", "./test/fixtures/cancel/slowAgent.ts"]),
  ]);
  await processes.spawn("runner", ["runner"]);
  client = await connect({ nc: await nats.connect("client") });
  observer = await nats.connect("observer");
});

/**
 * Resolves when the slow agent reports `what` (started, aborted) for the turn, with what it said
 * (for `aborted`, after how many ms); subscribe before causing it.
 */
function probe(
  sessionId: string,
  turnId: number,
  what: "started" | "aborted",
): { seen: Promise<{ at: number; said: string }>; sub: Subscription } {
  const sub = observer.subscribe(`conclave.inspect.slow.${sessionId}.${turnId}.${what}`, { max: 1 });
  const seen = (async () => {
    for await (const msg of sub) return { at: performance.now(), said: msg.string() };
    throw new Error(`the slow agent never reported ${what}`);
  })();
  return { seen, sub };
}

/**
 * How much earlier than the agent's own clock the worker starts its call's deadline timer, at most
 * (the request's decoding and the actor's start): a deadline abort reads at least
 * `agent_timeout_ms - DEADLINE_LEAD_MS` on the agent's clock.
 */
const DEADLINE_LEAD_MS = 100;

/**
 * The slow agent's signal fired before its call's own deadline (the runner's default policy) could:
 * the turn's end stopped it, not the deadline. (A cancel from another process spends the CLI's
 * start-up, a second or two, of the agent's 4 s.)
 */
function stoppedBeforeItsDeadline(said: string): void {
  expect(Number(said)).toBeLessThan(defaultTurnPolicy.agent_timeout_ms - DEADLINE_LEAD_MS);
}

const cancelFromAnotherProcess = (sessionId: string, turnId: number) =>
  run(
    process.execPath,
    [CONCLAVE_BIN, "cancel", "--session", sessionId, String(turnId), "--reason", "changed my mind"],
    {
      env: { ...process.env, CONCLAVE_NATS_URL: nats.url },
    },
  );

const contiguous = (events: EngineEvent[], turnId: number) => {
  const mine = events.filter((event) => event.turn_id === turnId);
  expect(mine.map((event) => event.seq)).toEqual(mine.map((_, index) => index));
  expect(mine.filter((event) => event.kind === "TURN_COMPLETED")).toHaveLength(1);
  return mine;
};

describe("cancelling a turn", () => {
  it("from another process ends a running turn as Cancelled, and its agent call stops", async () => {
    const started = probe("cancel-1", 1, "started");
    const aborted = probe("cancel-1", 1, "aborted");
    await observer.flush();
    const turn = client.submit("cancel-1", "a slow one, please");
    const events: EngineEvent[] = [];
    const collected = (async () => {
      for await (const event of turn) events.push(event);
    })();
    await started.seen;
    // When the cancellation reaches the runtime (its broadcast), as seen by a listener of the runners' own.
    const listener = await nats.connect("runner");
    const broadcast = listener.subscribe(subjects.turnCancelled, { max: 1 });
    await listener.flush();
    const broadcastSeen = (async () => {
      for await (const _ of broadcast) return performance.now();
      throw new Error("no cancellation broadcast");
    })();
    const asked = performance.now();
    const { stdout } = await cancelFromAnotherProcess("cancel-1", 1);
    expect(stdout.trim()).toBe("turn cancel-1/1: cancelling");
    const result = await turn.result;
    const ended = performance.now();
    await collected;
    expect(result.outcome).toEqual({ status: "Cancelled", reason: "changed my mind" });
    // No agent call left running: the slow agent's signal fired because of the cancellation, not at its own deadline.
    stoppedBeforeItsDeadline((await aborted.seen).said);
    // How long the end took is a figure, not a test (timing goals live in `npm run bench`).
    console.log(
      `cancel from another process: ended ${Math.round(ended - (await broadcastSeen))} ms after the runtime's broadcast, ${Math.round(ended - asked)} ms after the command was run`,
    );
    const mine = contiguous(events, 1);
    expect(mine.at(-1)).toMatchObject({ kind: "TURN_COMPLETED", payload: { outcome: { status: "Cancelled" } } });
    expect(mine.some((event) => event.kind === "AGENT_FAILED" && event.payload.code === "cancelled")).toBe(true);
    // Its status is written just after its TURN_COMPLETED.
    const status = await eventually(
      () => client.status("cancel-1", 1),
      (record) => record?.status === "done",
    );
    expect(status).toMatchObject({ status: "done", outcome: "Cancelled" });
  });

  it("through the client ends the turn, and its agent call stops", async () => {
    const started = probe("cancel-2", 1, "started");
    await observer.flush();
    const turn = client.submit("cancel-2", "slow again");
    const aborted = probe("cancel-2", 1, "aborted");
    await started.seen;
    await expect(client.cancel("cancel-2", 1)).resolves.toMatchObject({ status: "cancelling" });
    const result = await turn.result;
    expect(result.outcome).toEqual({ status: "Cancelled", reason: "cancelled by the client" });
    stoppedBeforeItsDeadline((await aborted.seen).said);
  });

  it("when the submit's signal aborts", async () => {
    const started = probe("cancel-3", 1, "started");
    await observer.flush();
    const abort = new AbortController();
    const turn = client.submit("cancel-3", "slow, then abort", { signal: abort.signal });
    await started.seen;
    abort.abort();
    expect((await turn.result).outcome).toMatchObject({ status: "Cancelled", reason: "aborted by the client" });
  });

  it("by Ctrl-C in conclave send", async () => {
    const started = probe("cancel-8", 1, "started");
    await observer.flush();
    const send = spawn(process.execPath, [CONCLAVE_BIN, "send", "--session", "cancel-8", "--json", "slow, then ^C"], {
      env: { ...process.env, CONCLAVE_NATS_URL: nats.url, CONCLAVE_LOG: "quiet" },
    });
    let stdout = "";
    send.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => send.on("exit", (code) => resolve(code)));
    await started.seen;
    send.kill("SIGINT");
    expect(await exited).toBe(1); // a Cancelled turn
    const events = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as EngineEvent);
    expect(events.at(-1)).toMatchObject({
      kind: "TURN_COMPLETED",
      payload: { outcome: { status: "Cancelled", reason: "cancelled from the command line (Ctrl-C)" } },
    });
    contiguous(events, 1);
  });

  it("of a turn queued behind another ends it without running it", async () => {
    const started = probe("cancel-4", 1, "started");
    await observer.flush();
    const first = client.submit("cancel-4", "slow first");
    const second = client.submit("cancel-4", "second, queued");
    await started.seen;
    const { turn_id } = await second.ack;
    await expect(client.cancel("cancel-4", turn_id, "not needed")).resolves.toMatchObject({ status: "cancelling" });
    await client.cancel("cancel-4", 1);
    expect((await first.result).outcome.status).toBe("Cancelled");
    const events: EngineEvent[] = [];
    for await (const event of second) events.push(event);
    // It waited for its session's running turn (one turn of a session runs at a time), then ended at once.
    expect(events.map((event) => event.kind)).toEqual([
      "TURN_QUEUED",
      "TURN_STARTED",
      "TURN_STAGE_CHANGED",
      "TURN_COMPLETED",
    ]);
    expect((await second.result).outcome).toEqual({ status: "Cancelled", reason: "not needed" });
  });

  it("by double-texting `interrupt` stops the interrupted turn's agent call too", async () => {
    const started = probe("cancel-7", 1, "started");
    const aborted = probe("cancel-7", 1, "aborted");
    await observer.flush();
    const first = client.submit("cancel-7", "slow, to be interrupted");
    await started.seen;
    const second = client.submit("cancel-7", "never mind, this instead", { onBusy: "interrupt" });
    // The worker's call saw its signal fire because the turn was interrupted, not at its own deadline.
    stoppedBeforeItsDeadline((await aborted.seen).said);
    const interrupted = await first.result;
    expect(interrupted.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: expect.arrayContaining([expect.objectContaining({ code: "interrupted" })]),
    });
    expect((await second.result).outcome.status).toBe("Complete");
  });

  it("of a finished turn says so, and of an unknown turn is a not_found error", async () => {
    const done = await client.submit("cancel-5", "hello").result;
    expect(done.outcome.status).toBe("Complete");
    await expect(client.cancel("cancel-5", 1)).resolves.toMatchObject({ status: "finished", outcome: "Complete" });
    const { stdout } = await cancelFromAnotherProcess("cancel-5", 1);
    expect(stdout.trim()).toBe("turn cancel-5/1 had already ended (Complete)");
    const unknown = await client.cancel("cancel-5", 99).catch((error: unknown) => error);
    expect(isConclaveError(unknown) && unknown.code).toBe("not_found");
    const cli = await cancelFromAnotherProcess("cancel-5", 99).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(cli).toMatchObject({ code: 2, stderr: expect.stringMatching(/no turn 99/) });
  });

  it("answers a malformed request with an error and keeps serving", async () => {
    const nc = client.nc;
    const reply = await nc.request("conclave.turn.cancel.cancel-6", new TextEncoder().encode('{"turn_id": "x"'));
    expect(reply.json<{ error: { code: string } }>().error.code).toBe("bad_json");
    const invalid = await nc.request("conclave.turn.cancel.cancel-6", new TextEncoder().encode('{"turn_id": 0}'));
    expect(invalid.json<{ error: { code: string } }>().error.code).toBe("invalid_request");
    expect((await client.submit("cancel-6", "still here?").result).outcome.status).toBe("Complete");
  });
});
