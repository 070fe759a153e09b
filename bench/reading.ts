import { clusterCpuPerTurnMs } from "./conclave.ts";
import type { BenchResults } from "./report.ts";
import { round } from "./stats.ts";
import { FAST_PATH_GOALS } from "./targets.ts";

/**
 * The report's reading of its own numbers: where a turn's time and CPU go,
 * measured against the targets. Every figure comes from this run's results.
 */

const f = (value: number, digits = 2) => round(value, digits).toString();

export function readingOfTheNumbers(results: BenchResults): string[] {
  const run = results.conclave[0]!;
  const lines: string[] = [];
  const level1 = run.levels.find((l) => l.sessions === 1);
  const top = run.levels.at(-1);
  const pipelines = results.inProcess[0]?.pipelines ?? [];
  const langgraph = pipelines.find((p) => p.name === "LangGraph.js");
  const memorySaver = pipelines.find((p) => p.name === "LangGraph.js + MemorySaver");
  const lg1 = langgraph?.levels.find((l) => l.sessions === 1);
  const ms1 = memorySaver?.levels.find((l) => l.sessions === 1);
  // The faster in-memory variant at the top level: the throughput target's reference.
  const lgTop = [langgraph, memorySaver]
    .map((p) => p?.levels.find((l) => l.sessions === top?.sessions))
    .filter((l) => l !== undefined)
    .sort((a, b) => b.turnsPerSec - a.turnsPerSec)[0];
  const floor = results.floorModel;
  const g = FAST_PATH_GOALS;
  const runnerCpu = (level: typeof level1) => level?.cpu.find((c) => c.process === "runner")?.perTurnMs ?? Number.NaN;

  if (level1 && floor && level1.runtime) {
    const runnerCpu1 = runnerCpu(level1);
    const cpuBound = runnerCpu1 > 0.4 * level1.runtime.p50;
    lines.push(
      `**${cpuBound ? "Latency is mostly the runner's own CPU, not the network." : "Latency is mostly waiting on hops."}** At c=1 the runner's turn takes ${f(level1.runtime.p50)} ms (p50) against a floor of ${f(floor.runnerFloorMs)} ms (${floor.runnerRtts} round trips × ${f(floor.rttMs)} ms + ${f(floor.eventPersistMs)} ms of event persistence); the runner alone burns ${f(runnerCpu1)} ms of CPU per turn (/proc), the workers ${f(level1.cpu.filter((c) => c.process.startsWith("worker")).reduce((s, c) => s + c.perTurnMs, 0))} ms between them, nats-server ${f(level1.cpu.find((c) => c.process === "nats-server")?.perTurnMs ?? Number.NaN)} ms. Each hop costs several times the bare round trip (see the step table): the time is spent encoding, validating and dispatching around each request, on both sides.`,
    );
  }
  if (level1 && lg1 && floor) {
    const bounds = [
      { name: `LangGraph.js's p50`, ms: lg1.latency.p50 * g.p50VsLangGraph },
      ...(ms1 ? [{ name: "a third of LangGraph.js + MemorySaver's", ms: ms1.latency.p50 * g.p50VsMemorySaver }] : []),
      { name: `${g.p50VsFloor}x the floor`, ms: floor.clientFloorMs * g.p50VsFloor },
    ].sort((a, b) => a.ms - b.ms);
    const needed = bounds[0]!;
    lines.push(
      `**The p50 targets need a turn of at most ${f(needed.ms)} ms at c=1** (the tightest bound: ${needed.name}; measured ${f(level1.latency.p50)} ms). The floor of this transport for this turn is ${f(floor.clientFloorMs)} ms client-side (${floor.clientRtts} round trips × ${f(floor.rttMs)} ms + event persistence) — ${
        floor.clientFloorMs > needed.ms
          ? `already ${f(floor.clientFloorMs / needed.ms)}x above it: with ${floor.clientRtts} sequential round trips plus durable events no runtime on this transport meets it; only fewer round trips can.`
          : `${f(needed.ms / floor.clientFloorMs)}x below the bound, so what stands between the turn and the target is the per-hop overhead on top of the round trips.`
      }`,
    );
  }
  if (top && lgTop) {
    const conclaveCpu = clusterCpuPerTurnMs(top);
    const lgCpu = lgTop.cpuPerTurnMs;
    // 2 cores ÷ Conclave's CPU per turn ≥ factor × LangGraph.js's one thread ÷ its CPU per turn.
    const budget = (2 * lgCpu) / g.throughputVsInMemory;
    lines.push(
      `**Throughput is bounded by CPU per turn.** At c=${top.sessions} Conclave's processes (runner, workers, nats-server) use ${f(conclaveCpu)} ms of CPU per turn in total (target: ${g.cpuPerTurnMs} ms), the faster in-memory LangGraph.js variant ${f(lgCpu)} ms in its one process. With two cores that caps Conclave near ${f(2_000 / conclaveCpu, 0)} turns/s (measured ${f(top.turnsPerSec, 0)}; the bench client takes its share of the same two cores) and LangGraph.js near ${f(1_000 / lgCpu, 0)} turns/s on its single thread (measured ${f(lgTop.turnsPerSec, 0)}). A ${g.throughputVsInMemory}x throughput lead on two cores needs Conclave's total CPU per turn at or below ${f(budget)} ms (2 cores × LangGraph's ${f(lgCpu)} ms ÷ ${g.throughputVsInMemory}): it is ${f(conclaveCpu / budget)}x that. The runner is the busiest process (${f(top.cpu.find((c) => c.process === "runner")?.cores ?? Number.NaN)} cores).`,
    );
  }
  return lines;
}
