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
import { round } from "./stats.ts";

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
  lapses: number;
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
  lapses: number;
  samples: SoakSample[];
  errors: string[];
}

/** Consumers on every stream of the account now. */
async function liveConsumers(instrument: NatsConnection): Promise<number> {
  const jsm = await jetstreamManager(instrument);
  let total = 0;
  for await (const stream of jsm.streams.list()) total += stream.state.consumer_count;
  return total;
}

/**
 * The soak: `soakTurns` turns of the offline deployment from `soakClients`
 * sessions at once, each turn sent like `conclave send` does (a new client
 * connects, submits, follows the turn to its end, closes), so consumers come
 * and go. Every few seconds: live consumers, nats-server's RSS, lease lapses.
 */
export async function runSoak(plan: BenchPlan, tag: string): Promise<SoakRun> {
  const p = plan.underLoad;
  const lapses = new LeaseLapses();
  const cluster = await startBenchCluster({ onLogLine: lapses.listener });
  const instrument = await cluster.connectInstrument("bench-soak-instrument");
  const natsPid = cluster.pids().find((x) => x.name === "nats-server")!.pid;
  try {
    const baselineConsumers = await liveConsumers(instrument);
    let tickets = p.soakTurns;
    let completed = 0;
    let notComplete = 0;
    let busyAnswers = 0;
    let openClients = 0;
    let running = p.soakClients;
    const errors = new Set<string>();
    const turn = async (session: string, text: string) => {
      const client = await connect({ servers: cluster.url, name: `bench-soak-${session}` });
      openClients++;
      try {
        const result = await client.submit(session, text, { timeoutMs: 120_000 }).result;
        if (result.outcome.status === "Complete") completed++;
        else notComplete++;
      } finally {
        openClients--;
        await client.close();
      }
    };
    const session = async (index: number) => {
      for (let n = 0; tickets > 0; n++) {
        tickets--;
        const text = plan.texts[(index + n) % plan.texts.length]!;
        try {
          await turn(`${tag}-soak-${index}`, text);
        } catch (error) {
          if (isConclaveError(error, "busy")) {
            busyAnswers++;
            tickets++; // not run: sent again after the hint
            await pause((error as { retryAfterMs?: number }).retryAfterMs ?? 500);
          } else {
            notComplete++;
            if (errors.size < 3) errors.add(messageOf(error));
          }
        }
      }
      running--;
    };
    const samples: SoakSample[] = [];
    const started = performance.now();
    const cpuBefore = cpuTimeMs(natsPid);
    const sample = async () => {
      const consumers = await liveConsumers(instrument).catch(() => Number.NaN);
      samples.push({
        atS: round((performance.now() - started) / 1000, 1),
        turns: completed + notComplete,
        consumers,
        openClients,
        runningSessions: running,
        natsRssMiB: round((processMemory(natsPid)?.rssKb ?? Number.NaN) / 1024, 1),
        lapses: lapses.count,
      });
      const last = samples.at(-1)!;
      progress(
        `  soak: ${last.turns} of ${p.soakTurns} turns in ${last.atS} s; ${last.consumers} consumers, ${last.openClients} clients open; nats-server ${last.natsRssMiB} MiB; ${last.lapses} lease lapses`,
      );
    };
    const stopSampling = ticker(() => void sample(), p.soakSampleMs);
    await Promise.all(Array.from({ length: p.soakClients }, (_, i) => session(i))).finally(stopSampling);
    const elapsedMs = performance.now() - started;
    const natsCpuMs = cpuTimeMs(natsPid) - cpuBefore;
    // Readers delete their consumers on close; JetStream drops a forgotten one after its 5 s inactivity threshold.
    await pause(6_000);
    const consumersAfter = await liveConsumers(instrument);
    progress(
      `under load, soak: ${completed + notComplete} turns in ${round(elapsedMs / 1000, 1)} s (${notComplete} not Complete); ${consumersAfter} consumers after the last client closed; nats-server ${round(natsCpuMs / Math.max(1, completed + notComplete), 2)} ms CPU per turn`,
    );
    const full = samples.filter((s) => s.runningSessions === p.soakClients && Number.isFinite(s.consumers));
    const turns = completed + notComplete;
    return {
      turns,
      clients: p.soakClients,
      completed,
      notComplete,
      busyAnswers,
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
      lapses: lapses.count,
      samples,
      errors: [...errors],
    };
  } finally {
    await instrument.close();
    await cluster.stop();
  }
}
