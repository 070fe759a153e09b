/**
 * The durability section of `npm run bench` (issue 37, "The cheap turn"): what a turn leaves in
 * the stores, turn after turn of one session, against LangGraph.js + PostgresSaver's tables after
 * the same turns of one thread; and how a runner's SIGKILL is taken over (bench/durabilityTakeover.ts).
 * Run alone with `npm run bench -- --only durability` (BENCH_QUICK=1: 50 turns, 3 kills).
 */
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import pg from "pg";
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { neutralModulators, neutralStance } from "../src/contracts/workspace.ts";
import { localTurnServices } from "../src/runtime/turnServices/localTurnServices.ts";
import { startBenchCluster } from "./cluster.ts";
import { conclaveTurn } from "./conclave.ts";
import type { DurabilityPlan } from "./durabilityPlan.ts";
import {
  DURABILITY_MARKERS,
  type DurabilityRun,
  durabilityTargets,
  renderDurability,
  type StoreReading,
} from "./durabilityReport.ts";
import { type DurabilityTakeover, runDurabilityTakeover } from "./durabilityTakeover.ts";
import { describeEnvironment } from "./environment.ts";
import { spliceSection, targetsTable } from "./markdown.ts";
import type { BenchPlan } from "./plan.ts";
import { postgresStarted, startBenchPostgres } from "./postgresSaver.ts";
import { progress } from "./progress.ts";
import { round } from "./stats.ts";

/** Every stream of the account (KV buckets are streams `KV_<bucket>`) and the bytes it holds now. */
async function streamBytes(instrument: NatsConnection): Promise<Record<string, number>> {
  const jsm = await jetstreamManager(instrument);
  const bytes: Record<string, number> = {};
  for await (const stream of jsm.streams.list()) bytes[stream.config.name] = stream.state.bytes;
  return bytes;
}

/**
 * `plan.turns` turns of one session back to back on the offline deployment (nats-server, the
 * workers, a runner); every stream's `state.bytes` before the first turn and after each checkpoint.
 */
async function conclaveSession(plan: DurabilityPlan, texts: string[], tag: string): Promise<DurabilityRun["conclave"]> {
  const cluster = await startBenchCluster();
  const instrument = await cluster.connectInstrument("bench-durability-instrument");
  const nc = await connectBus(busOptions("client", { servers: cluster.url, name: "bench-durability-client" }));
  const session = `${tag}-durability`;
  try {
    const readings: StoreReading[] = [{ turn: 0, streams: await streamBytes(instrument) }];
    let failed = 0;
    const started = performance.now();
    for (let turn = 1; turn <= plan.turns; turn++) {
      const sample = await conclaveTurn(nc, session, texts[(turn - 1) % texts.length]!);
      if (!sample.ok) failed++;
      if (!plan.checkpoints.includes(turn)) continue;
      readings.push({ turn, streams: await streamBytes(instrument) });
      const total = Object.values(readings.at(-1)!.streams).reduce((sum, n) => sum + n, 0);
      progress(
        `durability, Conclave: ${turn} of ${plan.turns} turns of one session; ${round(total / 1024, 1)} KiB stored`,
      );
    }
    return { session, failed, elapsedMs: round(performance.now() - started, 0), readings };
  } finally {
    await nc.close();
    await instrument.close();
    await cluster.stop();
  }
}

/** The size of PostgresSaver's tables (`pg_total_relation_size`: table, TOAST and indexes), by table. */
const TABLE_SIZES = `SELECT c.relname AS name, pg_total_relation_size(c.oid)::bigint AS bytes
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname LIKE 'checkpoint%'`;

/** The same turns on one thread of LangGraph.js + PostgresSaver; its tables' sizes at the same checkpoints. */
async function postgresThread(plan: DurabilityPlan, texts: string[], tag: string): Promise<DurabilityRun["postgres"]> {
  const started = await startBenchPostgres();
  if (!postgresStarted(started)) return { error: started.setup.reason ?? "PostgreSQL did not start" };
  const client = new pg.Client({ connectionString: started.url });
  try {
    await client.connect();
    const pipeline = await started.pipeline(localTurnServices(), {
      modulators: neutralModulators(),
      stance: neutralStance(),
    });
    const sizes = async () =>
      Object.fromEntries(
        (await client.query<{ name: string; bytes: string }>(TABLE_SIZES)).rows.map((r) => [r.name, Number(r.bytes)]),
      );
    const thread = `${tag}-durability`;
    const readings: StoreReading[] = [{ turn: 0, streams: await sizes() }];
    let failed = 0;
    const begun = performance.now();
    try {
      for (let turn = 1; turn <= plan.turns; turn++) {
        const result = await pipeline.runTurn(thread, texts[(turn - 1) % texts.length]!);
        if (!result.ok) failed++;
        if (!plan.checkpoints.includes(turn)) continue;
        readings.push({ turn, streams: await sizes() });
        const total = Object.values(readings.at(-1)!.streams).reduce((sum, n) => sum + n, 0);
        progress(
          `durability, PostgresSaver: ${turn} of ${plan.turns} turns of one thread; ${round(total / 1024, 1)} KiB`,
        );
      }
    } finally {
      await pipeline.close?.();
    }
    return { version: started.setup.version, failed, elapsedMs: round(performance.now() - begun, 0), readings };
  } catch (error) {
    return { error: error instanceof Error ? (error.message.split("\n")[0] ?? error.message) : String(error) };
  } finally {
    await client.end().catch(() => {});
    await started.stop();
  }
}

/** A part that failed is reported in the section, not fatal to the bench. */
const failure = (error: unknown) => ({
  error: error instanceof Error ? (error.message.split("\n")[0] ?? error.message) : String(error),
});

/** The whole section: Conclave's session, PostgresSaver's thread, then the takeovers. */
export async function runDurability(plan: BenchPlan, tag: string): Promise<DurabilityRun> {
  const p = plan.durability;
  const startedAt = performance.now();
  progress(
    `durability: ${p.turns} turns of one session (stores read after turns ${p.checkpoints.join(", ")}), then ${p.kills} kills on one server and on three nodes`,
  );
  const conclave = await conclaveSession(p, plan.texts, tag).catch(failure);
  const postgres = await postgresThread(p, plan.texts, tag).catch(failure);
  const takeover: DurabilityTakeover = await runDurabilityTakeover(p, plan.texts[2]!, tag);
  return { plan: p, conclave, postgres, takeover, durationS: Math.round((performance.now() - startedAt) / 1000) };
}

/**
 * `--only durability`: the section alone, its targets and figures on stdout, its results in a
 * temporary file. A full-size run (not BENCH_QUICK) also replaces its section of `report`.
 */
export async function durabilityOnly(plan: BenchPlan, report: string): Promise<void> {
  const run = await runDurability(plan, `b${Date.now().toString(36)}`);
  const environment = describeEnvironment();
  const path = join(tmpdir(), `conclave-bench-durability-${Date.now()}.json`);
  writeFileSync(path, `${JSON.stringify({ environment, run }, null, 2)}\n`);
  const targets = durabilityTargets(run);
  const ran = `Run alone (\`npm run bench -- --only durability\`) at ${environment.commit}, ${environment.date.slice(0, 10)}, on ${environment.cores} cores (${environment.cpuModel})${plan.quick ? ", BENCH_QUICK" : ""}.`;
  const section = renderDurability(run, `${ran}\n\n${targetsTable(targets)}`);
  process.stdout.write(`${section}\n`);
  if (!plan.quick) spliceSection(report, section, ...DURABILITY_MARKERS);
  progress(
    `done in ${run.durationS} s; results in ${path}${plan.quick ? "; docs/ left alone (BENCH_QUICK)" : "; its section of docs/BENCHMARKS.md replaced"}`,
  );
  for (const target of targets) progress(`target ${target.id}: ${target.verdict}`);
}
