/**
 * `conclave replay`, `verify` and `cost` start from the latest replay
 * checkpoint and fold only what was stored after it, on a real nats-server
 * with an in-process runner checkpointing every 3 turns and a worker on the
 * scripted OpenAI-compatible model (so turns record tokens). Each answer
 * equals the fold from the start, which reads more of the log; with no
 * usable checkpoint they fold from the start and say why.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { buckets } from "../../src/bus/subjects.ts";
import { type ConclaveClient, type CostSummary, connect } from "../../src/client/index.ts";
import type { PriceTable } from "../../src/cost/prices.ts";
import { priceSummary } from "../../src/cost/summary.ts";
import { LedgerStore } from "../../src/ledgers/ledgerStore.ts";
import { replayCost } from "../../src/runtime/checkpoints/costReplay.ts";
import type { TapeClients } from "../../src/runtime/checkpoints/tapeReader.ts";
import { replayLedgers, replaySession } from "../../src/runtime/replay.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { type Checkpoint, SessionStore } from "../../src/runtime/sessionStore.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { runConclave } from "../helpers/cli.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";

const nats = useNatsServer();
const SESSION = "long-tape";
const TURNS = 8;
const PRICES: PriceTable = {
  models: { "scripted-model": { input_per_million: 1.5, output_per_million: 6 } },
  actors: {},
  default_model: "scripted-model",
  tenants: {},
};

let model: OpenAIServer;
let worker: WorkerHandle;
let runner: Runner;
let client: ConclaveClient;
let sessions: SessionStore;
let ledgers: LedgerStore;
let clients: TapeClients;
let js: ReturnType<typeof jetstream>;

/** Waits, on the session bucket's watch, for the session's checkpoint through `turnId` with its domains. */
async function checkpointThrough(session: string, turnId: number): Promise<Checkpoint> {
  const kv = await new Kvm(await nats.connect("runner")).open(buckets.sessions);
  const watch = await kv.watch({ key: `checkpoint.${session}` });
  try {
    for await (const entry of watch) {
      if (entry.operation !== "PUT") continue;
      const checkpoint = entry.json<Checkpoint>();
      if (checkpoint.through_turn_id >= turnId && checkpoint.domains) return checkpoint;
    }
  } finally {
    watch.stop();
  }
  throw new Error("the watch ended");
}

/** A summary with its dollar amounts rounded (a priced checkpoint adds them up in another order). */
function rounded(summary: CostSummary): CostSummary {
  const round = <R extends { usd: number }>(row: R): R => ({ ...row, usd: Math.round(row.usd * 1e9) / 1e9 });
  return {
    ...summary,
    total: round(summary.total),
    by_turn: summary.by_turn.map(round),
    by_actor: summary.by_actor.map(round),
    by_model: summary.by_model.map(round),
    by_skill: summary.by_skill.map(round),
  };
}

beforeAll(async () => {
  model = await startOpenAIServer(conclaveModel());
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: builtinAgents("*"),
    services: [...CORE_SERVICES],
    llm: { baseURL: model.url, apiKey: "test", model: "scripted-model", timeoutMs: 60_000, maxRetries: 0 },
  });
  runner = await Runner.start(await nats.connect("runner"), { checkpointEvery: 3 });
  client = await connect({ nc: await nats.connect("client") });
  const nc = await nats.connect("runner");
  sessions = await SessionStore.open(nc);
  ledgers = await LedgerStore.open(nc);
  js = jetstream(nc);
  clients = { js, jsm: await jetstreamManager(nc) };
  for (let turn = 1; turn <= TURNS; turn++) {
    await client.submit(SESSION, `Turn ${turn}: I am planning my week, item ${turn}.`).result;
    await client.truth.upsertFact(SESSION, { statement: `fact number ${turn}` });
  }
  // Turns 1..6 are in the checkpoint (saved at turns 3 and 6); turns 7 and 8 are the delta.
  await checkpointThrough(SESSION, 6);
}, 240_000);
afterAll(async () => {
  await client?.close();
  await runner?.stop();
  await worker?.stop();
  await model?.stop();
});

describe("replay, verify and cost from the latest checkpoint", () => {
  it("replays the session state from the checkpoint to what a fold from the start gives, reading fewer events", async () => {
    const jsm = clients.jsm;
    const fromCheckpoint = await replaySession(js, jsm, sessions, SESSION);
    const fromStart = await replaySession(js, jsm, sessions, SESSION, { from: "start" });
    expect(fromCheckpoint.from_turn_id).toBe(6);
    expect(fromCheckpoint.turns_replayed).toBe(2);
    expect(fromStart.from_turn_id).toBe(0);
    expect(fromCheckpoint.note).toBeUndefined();
    expect(fromCheckpoint.rebuilt).toEqual(fromStart.rebuilt);
    expect(fromCheckpoint.rebuilt.turns_completed).toBe(TURNS);
    expect(fromCheckpoint.matches && fromStart.matches).toBe(true);
    expect(fromCheckpoint.events_read).toBeGreaterThan(0);
    expect(fromCheckpoint.events_read).toBeLessThan(fromStart.events_read / 2);
  });

  it("folds the ledgers from the checkpoint's ledgers plus the events after it, as from the start", async () => {
    const fromCheckpoint = await replayLedgers(ledgers, sessions, SESSION);
    const fromStart = await replayLedgers(ledgers, sessions, SESSION, { from: "start" });
    expect(fromCheckpoint.rebuilt).toEqual(fromStart.rebuilt);
    expect(fromCheckpoint.rebuilt.truth.facts).toHaveLength(TURNS);
    expect(fromCheckpoint.matches && fromStart.matches).toBe(true);
    expect(fromStart.from_seq).toBe(0);
    expect(fromStart.events_read).toBe(TURNS);
    expect(fromCheckpoint.from_seq).toBeGreaterThan(0);
    expect(fromCheckpoint.events_read).toBeLessThan(TURNS);
    // The runner answers the client's replay (and so client.verify's ledgers check) the same way.
    const viaClient = await client.ledgers.replay(SESSION);
    expect(viaClient.rebuilt).toEqual(fromStart.rebuilt);
    expect(viaClient.from_seq).toBe(fromCheckpoint.from_seq);
  });

  it("prices the checkpoint's cost plus the turns after it to the client's fold from the start, reading fewer events", async () => {
    const fromCheckpoint = await replayCost(clients, sessions, SESSION, { table: PRICES });
    const fromStart = await replayCost(clients, sessions, SESSION, { table: PRICES, from: "start" });
    const client_ = await client.cost(SESSION, { prices: PRICES });
    expect(fromCheckpoint.from_turn_id).toBe(6);
    expect(fromCheckpoint.note).toBeUndefined();
    expect(client_.total.prompt_tokens).toBeGreaterThan(0);
    expect(client_.turns).toBe(TURNS);
    expect(rounded(fromCheckpoint.summary)).toEqual(rounded(client_));
    expect(fromStart.summary).toEqual(client_);
    expect(fromCheckpoint.events_read).toBeLessThan(fromStart.events_read / 2);
    // Unpriced, the amounts are exact: tokens only.
    const unpriced = { models: {}, actors: {}, tenants: {} };
    const tokens = await replayCost(clients, sessions, SESSION, { table: unpriced });
    expect(tokens.from_turn_id).toBe(6);
    expect(tokens.summary).toEqual(await client.cost(SESSION, { prices: unpriced }));
  });

  it("prices the checkpoint's calls on the models they recorded, the actors map only for calls that name none", async () => {
    const mixed: PriceTable = {
      ...PRICES,
      models: { ...PRICES.models, big: { input_per_million: 10, output_per_million: 30 } },
      actors: { council: "big" },
    };
    // Every call recorded scripted-model: the map does not move the council, and the checkpoint is used.
    const replayed = await replayCost(clients, sessions, SESSION, { table: mixed });
    expect(replayed.from_turn_id).toBe(6);
    expect(replayed.note).toBeUndefined();
    expect(rounded(replayed.summary)).toEqual(rounded(await client.cost(SESSION, { prices: mixed })));
    expect(replayed.summary.by_actor.find((row) => row.name === "council")?.model).toBe("scripted-model");
    // An older log's checkpoint (no model recorded) that the map puts on different models cannot be priced afterwards.
    const row = { prompt_tokens: 10, completion_tokens: 5, usd: 0, unpriced_tokens: 15 };
    const older: CostSummary = {
      session_id: SESSION,
      turns: 1,
      total: { ...row, prompt_tokens: 20, completion_tokens: 10, unpriced_tokens: 30 },
      by_turn: [{ name: "1", ...row, prompt_tokens: 20, completion_tokens: 10, unpriced_tokens: 30 }],
      by_actor: [
        { name: "council", model: "unknown", ...row },
        { name: "voice", model: "unknown", ...row },
      ],
      by_model: [{ name: "unknown", ...row, prompt_tokens: 20, completion_tokens: 10, unpriced_tokens: 30 }],
      by_skill: [],
    };
    expect(priceSummary(older, mixed)).toBeNull();
  });

  it("`conclave replay`, `verify` and `cost` start from the checkpoint; --from-start folds every turn", async () => {
    const replay = await runConclave(nats.url, ["replay", "--session", SESSION]);
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toContain("replayed turns 7..8 (from the checkpoint after turn 6)");
    const fromStart = await runConclave(nats.url, ["replay", "--session", SESSION, "--from-start"]);
    expect(fromStart.code, fromStart.stderr).toBe(0);
    expect(fromStart.stdout).toContain(`replayed turns 1..${TURNS} (from the start)`);
    const verify = await runConclave(nats.url, ["verify", SESSION, "--json"]);
    expect(verify.code, verify.stderr).toBe(0);
    const state = JSON.parse(verify.stdout).checks.find((check: { name: string }) => check.name === "replay_state");
    expect(state.evidence[0]).toContain("from the checkpoint after turn 6");
    const cost = await runConclave(nats.url, ["cost", SESSION, "--json"]);
    expect(cost.code, cost.stderr).toBe(0);
    expect(JSON.parse(cost.stdout)).toEqual(
      await client.cost(SESSION, { prices: { models: {}, actors: {}, tenants: {} } }),
    );
  });

  it("folds a fork's cost from the start, and says why: its checkpoint holds its source's cost", async () => {
    await client.fork({ session: SESSION, at: { turn: 4 }, as: `${SESSION}-fork` });
    const replayed = await replayCost(clients, sessions, `${SESSION}-fork`, { table: PRICES });
    expect(replayed.from_turn_id).toBe(0);
    expect(replayed.note).toBe("the checkpoint of a fork holds its source's cost: folded from the start");
    expect(replayed.summary).toEqual(await client.cost(`${SESSION}-fork`, { prices: PRICES }));
  });

  it("folds from the start, with a note, when the checkpoint cannot be read", async () => {
    const kv = await new Kvm(await nats.connect("runner")).open(buckets.sessions);
    await kv.put(`checkpoint.${SESSION}`, "not a checkpoint");
    const state = await replaySession(js, clients.jsm, sessions, SESSION);
    expect(state.from_turn_id).toBe(0);
    expect(state.note).toMatch(/^the checkpoint could not be read \(.+\): folded from the start$/);
    expect(state.matches).toBe(true);
    const cost = await replayCost(clients, sessions, SESSION, { table: PRICES });
    expect(cost.from_turn_id).toBe(0);
    expect(cost.summary).toEqual(await client.cost(SESSION, { prices: PRICES }));
    expect((await replayLedgers(ledgers, sessions, SESSION)).from_seq).toBe(0);
  });
});
