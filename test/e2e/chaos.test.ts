/**
 * The chaos run: 60 turns over 15 sessions in LLM mode (a model that takes
 * 100 ms a call), two runners and three workers, while each runner and each
 * worker is killed with SIGKILL in turn (and a new one started), then
 * nats-server is restarted. Every kill waits for turns to be under way, not
 * for a guessed delay. Promised: every submitted turn completes exactly once,
 * none lost or duplicated, every log contiguous; and no client following its
 * turn sees a false timeout. The counts are printed.
 */
import { once } from "node:events";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect, TurnTimeoutError } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { TurnAck } from "../../src/contracts/turn.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { settledStatus } from "../helpers/turnStatus.ts";

const SESSIONS = 15;
const TURNS_PER_SESSION = 4;
/** The whole run's bound: the load must end within it. */
const RUN_BOUND_MS = 150_000;

const nats = useNatsServer();
let model: OpenAIServer;
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "chaos-model", CONCLAVE_LLM_MAX_RETRIES: "1" }),
);

/** The live process of each slot; a killed one is replaced by a new one of the same kind. */
const slots = new Map<string, { args: string[]; process: ConclaveProcess }>();
let generation = 0;

beforeAll(async () => {
  model = await startOpenAIServer(conclaveModel({ latencyMs: 100 }));
  const kinds: [string, string[]][] = [
    ["worker-agents", ["worker", "--agents", "*"]],
    ["worker-both", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]],
    ["worker-core", ["worker", "--services", "scheduler,council,critics,memory"]],
    ["runner-1", ["runner"]],
    ["runner-2", ["runner"]],
  ];
  for (const [slot, args] of kinds) slots.set(slot, { args, process: await processes.spawn(slot, args) });
}, 90_000);
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
  await model?.stop();
});

/** SIGKILL the slot's process, wait for it to be gone, and start another in its place. */
async function killAndReplace(slot: string): Promise<void> {
  const entry = slots.get(slot)!;
  const exited = once(entry.process.child, "exit");
  entry.process.child.kill("SIGKILL");
  await exited;
  entry.process = await processes.spawn(`${slot}-${++generation}`, entry.args);
}

interface Counts {
  submitted: number;
  completed: number;
  lost: number;
  duplicated: number;
  takenOver: number;
  falseTimeouts: number;
}

describe("the chaos run", () => {
  it("completes every turn exactly once through kills of each kind and a nats-server restart", async () => {
    const started = Date.now();
    const acks: TurnAck[] = [];
    const falseTimeouts: string[] = [];
    const otherFailures: string[] = [];
    let finished = 0;
    /** Resolves when `finished` reaches a count: the chaos steps wait for progress, not for time. */
    const progressWaiters: { count: number; resolve: () => void }[] = [];
    const progressed = () => {
      finished += 1;
      for (const waiter of progressWaiters.filter((w) => finished >= w.count)) {
        progressWaiters.splice(progressWaiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    };
    const reach = (count: number) =>
      finished >= count ? Promise.resolve() : new Promise<void>((resolve) => progressWaiters.push({ count, resolve }));

    const clients: ConclaveClient[] = [];
    // Clients as a user's application makes them: connect() rides out a server restart.
    for (let i = 0; i < 3; i++) clients.push(await connect({ servers: nats.url }));
    closers.push(...clients.map((client) => () => client.close()));

    /** One session's conversation: each turn submitted (retried with its idempotency key while the server is away), then followed to its end. */
    const converse = async (session: string, client: ConclaveClient) => {
      for (let turn = 1; turn <= TURNS_PER_SESSION; turn++) {
        let ack: TurnAck | null = null;
        let stream: ReturnType<ConclaveClient["submit"]> | null = null;
        while (!ack) {
          if (Date.now() - started > RUN_BOUND_MS) throw new Error(`${session}: could not submit turn ${turn}`);
          stream = client.submit(session, `I'm stressed about deadline number ${turn}`, {
            idempotencyKey: `${session}-${turn}`,
            timeoutMs: 45_000,
          });
          ack = await stream.ack.catch(() => null);
          if (!ack) await new Promise((resolve) => setTimeout(resolve, 250)); // the server is away: as any client, retry
        }
        acks.push(ack);
        const followed = Date.now();
        let seen = 0;
        let last = "";
        try {
          for await (const event of stream!) {
            seen++;
            last = event.kind;
          }
          await stream!.result;
        } catch (error) {
          if (error instanceof TurnTimeoutError)
            falseTimeouts.push(
              `${session}/${ack.turn_id} after ${Date.now() - followed} ms, ${seen} events seen, the last ${last || "none"}`,
            );
          else otherFailures.push(`${session}/${ack.turn_id}: ${String(error)}`);
        }
        progressed();
      }
    };
    const load = Promise.all(
      Array.from({ length: SESSIONS }, (_, i) => converse(`chaos-${i}`, clients[i % clients.length]!)),
    );

    // The chaos: each step once a few more turns have finished since the last one.
    let step = 0;
    for (const slot of ["runner-1", "worker-agents", "worker-both", "worker-core", "runner-2"]) {
      await reach(++step * 6);
      await killAndReplace(slot);
    }
    await reach(++step * 6);
    await nats.restart(500);

    await load;
    const total = SESSIONS * TURNS_PER_SESSION;

    // Every acked turn settles, and its log holds it exactly once.
    const observer = await nats.connect("observer");
    const js = jetstream(observer);
    const jsm = await jetstreamManager(observer);
    const counts: Counts = {
      submitted: acks.length,
      completed: 0,
      lost: 0,
      duplicated: 0,
      takenOver: 0,
      falseTimeouts: 0,
    };
    const broken: string[] = [];
    for (const ack of acks) {
      const key = `${ack.session_id}/${ack.turn_id}`;
      const status = await settledStatus(observer, ack.session_id, ack.turn_id, 60_000).catch(() => null);
      const events: EngineEvent[] = await readEvents(js, jsm, ack.session_id, ack.turn_id);
      const terminal = events.filter((event) => event.kind === "TURN_COMPLETED").length;
      if (terminal === 0 || status?.status !== "done") counts.lost += 1;
      else if (terminal > 1) counts.duplicated += 1;
      else counts.completed += 1;
      if (events.some((event) => event.kind === "TURN_RESUMED")) counts.takenOver += 1;
      const contiguous = events.every((event, index) => event.seq === index);
      if (!contiguous || events.at(-1)?.kind !== "TURN_COMPLETED") broken.push(key);
    }
    counts.falseTimeouts = falseTimeouts.length;
    console.log(
      `chaos run in ${Math.round((Date.now() - started) / 1_000)} s: submitted ${counts.submitted}, completed ${counts.completed}, lost ${counts.lost}, duplicated ${counts.duplicated}, taken over ${counts.takenOver}, false timeouts ${counts.falseTimeouts}`,
    );

    expect(otherFailures).toEqual([]);
    expect(falseTimeouts).toEqual([]);
    expect(broken).toEqual([]);
    expect(counts).toMatchObject({ submitted: total, completed: total, lost: 0, duplicated: 0, falseTimeouts: 0 });
    // Each turn of a session ran once: one ack per idempotency key.
    expect(new Set(acks.map((ack) => `${ack.session_id}/${ack.turn_id}`)).size).toBe(total);

    // No process died but those killed, and a normal turn completes after it all.
    for (const [slot, { process }] of slots) expect(process.child.exitCode, slot).toBeNull();
    const after = await clients[0]!.submit("chaos-after", "hello again").result;
    expect(after.response.length).toBeGreaterThan(0);
  }, 240_000);
});
