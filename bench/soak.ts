import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "../src/client/client.ts";
import { pause } from "../src/deadline.ts";
import { isConclaveError, messageOf } from "../src/errors.ts";
import { startBenchCluster } from "./cluster.ts";
import { LeaseLapses } from "./loggedProcess.ts";
import type { BenchPlan } from "./plan.ts";
import { cpuTimeMs, processMemory } from "./procfs.ts";
import { progress, ticker } from "./progress.ts";
import { middle, round } from "./stats.ts";

/** One reading during the soak. */
export interface SoakSample {
  atS: number;
  turns: number;
  /** Consumers on every stream of the account (JetStream's stream list, `consumer_count`). */
  consumers: number;
  /** Client connections open at that moment, and sessions still sending turns. */
  openClients: number;
  runningSessions: number;
  natsRssMiB: number;
  /** RSS of each runtime process (runner, workers), MiB. */
  rssMiB: Record<string, number>;
  lapses: number;
}

/** How much a process's RSS grew once warm: the median of the last quarter's samples ÷ that of the second quarter's, minus 1. */
export interface RssGrowth {
  process: string;
  warmMiB: number;
  endMiB: number;
  growth: number;
}

export interface SoakRun {
  turns: number;
  clients: number;
  completed: number;
  /** Turns that ended other than Complete, or failed, or were refused. */
  notComplete: number;
  busyAnswers: number;
  elapsedMs: number;
  /** Consumers before the first turn: the runtime's own (runner, workers), left out of the per-client figure. */
  baselineConsumers: number;
  /** Max over the samples taken while every session ran: (consumers − baseline) ÷ sessions. */
  maxConsumersPerClient: number;
  maxConsumers: number;
  /** Consumers a few seconds after the last client closed. */
  consumersAfter: number;
  maxNatsRssMiB: number;
  natsCpuMs: number;
  natsCpuPerTurnMs: number;
  /** Growth of every stream's stored bytes over the soak (the event log, KV buckets, memory) ÷ the turns. */
  storedBytesPerTurn: number;
  /** Runner and workers' RSS growth after warm-up, the largest first. */
  rssGrowth: RssGrowth[];
  lapses: number;
  samples: SoakSample[];
  errors: string[];
}

/** Consumers on every stream of the account now, and the bytes those streams store. */
async function streamTotals(instrument: NatsConnection): Promise<{ consumers: number; bytes: number }> {
  const jsm = await jetstreamManager(instrument);
  const total = { consumers: 0, bytes: 0 };
  for await (const stream of jsm.streams.list()) {
    total.consumers += stream.state.consumer_count;
    total.bytes += stream.state.bytes;
  }
  return total;
}

const liveConsumers = async (instrument: NatsConnection) => (await streamTotals(instrument)).consumers;

/**
 * RSS growth of each runtime process once warm. Samples are placed by the turns run so far: the
 * first quarter of the soak's turns is warm-up; the second quarter's median RSS is the warm
 * figure, the last quarter's the end one. Medians, so one GC's sawtooth does not decide it.
 */
export function rssGrowthAfterWarmUp(samples: SoakSample[], turns: number): RssGrowth[] {
  const within = (from: number, to: number) => samples.filter((s) => s.turns >= from * turns && s.turns <= to * turns);
  const warm = within(0.25, 0.5);
  const end = within(0.75, 1);
  const rss = (kept: SoakSample[], process: string) =>
    middle(kept.map((s) => s.rssMiB[process] ?? Number.NaN).filter(Number.isFinite)) ?? Number.NaN;
  const processes = [...new Set(samples.flatMap((s) => Object.keys(s.rssMiB)))];
  return processes
    .map((process) => {
      const warmMiB = rss(warm, process);
      const endMiB = rss(end, process);
      return { process, warmMiB, endMiB, growth: round(endMiB / warmMiB - 1, 3) };
    })
    .sort((a, b) => (Number.isFinite(b.growth) ? b.growth : -1) - (Number.isFinite(a.growth) ? a.growth : -1));
}

/**
 * The soak's clients: `sessions` sessions at once, each sending turns back to
 * back while tickets remain, every turn from a new client as `conclave send`
 * sends it (connect, submit, follow to the end, close). A `busy` turn is sent
 * again after its hint.
 */
class SoakClients {
  completed = 0;
  notComplete = 0;
  busyAnswers = 0;
  openClients = 0;
  running: number;
  readonly errors = new Set<string>();
  #tickets: number;

  constructor(
    private readonly url: string,
    private readonly texts: string[],
    turns: number,
    sessions: number,
  ) {
    this.#tickets = turns;
    this.running = sessions;
  }

  get turns(): number {
    return this.completed + this.notComplete;
  }

  run(tag: string): Promise<void> {
    return Promise.all(Array.from({ length: this.running }, (_, i) => this.#session(`${tag}-soak-${i}`, i))).then(
      () => {},
    );
  }

  async #turn(session: string, text: string): Promise<void> {
    const client = await connect({ servers: this.url, name: `bench-soak-${session}` });
    this.openClients++;
    try {
      const result = await client.submit(session, text, { timeoutMs: 120_000 }).result;
      if (result.outcome.status === "Complete") this.completed++;
      else this.notComplete++;
    } finally {
      this.openClients--;
      await client.close();
    }
  }

  async #session(session: string, index: number): Promise<void> {
    for (let n = 0; this.#tickets > 0; n++) {
      this.#tickets--;
      try {
        await this.#turn(session, this.texts[(index + n) % this.texts.length]!);
      } catch (error) {
        if (isConclaveError(error, "busy")) {
          this.busyAnswers++;
          this.#tickets++; // not run: sent again after the hint
          await pause((error as { retryAfterMs?: number }).retryAfterMs ?? 500);
        } else {
          this.notComplete++;
          if (this.errors.size < 3) this.errors.add(messageOf(error));
        }
      }
    }
    this.running--;
  }
}

/**
 * The soak: `soakTurns` turns of the offline deployment from `soakClients`
 * sessions at once (SoakClients), so consumers come and go. Every few
 * seconds: live consumers, nats-server's RSS, lease lapses.
 */
export async function runSoak(plan: BenchPlan, tag: string): Promise<SoakRun> {
  const p = plan.underLoad;
  const lapses = new LeaseLapses();
  const cluster = await startBenchCluster({ onLogLine: lapses.listener });
  const instrument = await cluster.connectInstrument("bench-soak-instrument");
  const natsPid = cluster.pids().find((x) => x.name === "nats-server")!.pid;
  const runtime = cluster.pids().filter((x) => x.name !== "nats-server");
  try {
    const { consumers: baselineConsumers, bytes: bytesBefore } = await streamTotals(instrument);
    const load = new SoakClients(cluster.url, plan.texts, p.soakTurns, p.soakClients);
    const samples: SoakSample[] = [];
    const started = performance.now();
    const cpuBefore = cpuTimeMs(natsPid);
    const sample = async () => {
      const consumers = await liveConsumers(instrument).catch(() => Number.NaN);
      const last: SoakSample = {
        atS: round((performance.now() - started) / 1000, 1),
        turns: load.turns,
        consumers,
        openClients: load.openClients,
        runningSessions: load.running,
        natsRssMiB: round((processMemory(natsPid)?.rssKb ?? Number.NaN) / 1024, 1),
        rssMiB: Object.fromEntries(
          runtime.map((x) => [x.name, round((processMemory(x.pid)?.rssKb ?? Number.NaN) / 1024, 1)]),
        ),
        lapses: lapses.count,
      };
      samples.push(last);
      progress(
        `  soak: ${last.turns} of ${p.soakTurns} turns in ${last.atS} s; ${last.consumers} consumers, ${last.openClients} clients open; nats-server ${last.natsRssMiB} MiB; ${last.lapses} lease lapses`,
      );
    };
    const stopSampling = ticker(() => void sample(), p.soakSampleMs);
    await load.run(tag).finally(stopSampling);
    const elapsedMs = performance.now() - started;
    const natsCpuMs = cpuTimeMs(natsPid) - cpuBefore;
    // Readers delete their consumers on close; JetStream drops a forgotten one after its 5 s inactivity threshold.
    await pause(6_000);
    const { consumers: consumersAfter, bytes: bytesAfter } = await streamTotals(instrument);
    const turns = load.turns;
    progress(
      `under load, soak: ${turns} turns in ${round(elapsedMs / 1000, 1)} s (${load.notComplete} not Complete); ${consumersAfter} consumers after the last client closed; nats-server ${round(natsCpuMs / Math.max(1, turns), 2)} ms CPU per turn`,
    );
    const full = samples.filter((s) => s.runningSessions === p.soakClients && Number.isFinite(s.consumers));
    return {
      turns,
      clients: p.soakClients,
      completed: load.completed,
      notComplete: load.notComplete,
      busyAnswers: load.busyAnswers,
      elapsedMs: round(elapsedMs, 0),
      baselineConsumers,
      maxConsumersPerClient: round(
        Math.max(0, ...full.map((s) => (s.consumers - baselineConsumers) / p.soakClients)),
        2,
      ),
      maxConsumers: Math.max(0, ...samples.map((s) => s.consumers).filter(Number.isFinite)),
      consumersAfter,
      maxNatsRssMiB: Math.max(0, ...samples.map((s) => s.natsRssMiB).filter(Number.isFinite)),
      natsCpuMs: round(natsCpuMs, 0),
      natsCpuPerTurnMs: round(natsCpuMs / Math.max(1, turns), 3),
      storedBytesPerTurn: Math.round((bytesAfter - bytesBefore) / Math.max(1, turns)),
      rssGrowth: rssGrowthAfterWarmUp(samples, turns),
      lapses: lapses.count,
      samples,
      errors: [...load.errors],
    };
  } finally {
    await instrument.close();
    await cluster.stop();
  }
}
