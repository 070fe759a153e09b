import type { BenchResults } from "./report.ts";
import { round } from "./stats.ts";

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
  const langgraph = results.inProcess[0]?.pipelines.find((p) => p.name === "LangGraph.js");
  const lg1 = langgraph?.levels.find((l) => l.sessions === 1);
  const lgTop = langgraph?.levels.find((l) => l.sessions === top?.sessions);
  const floor = results.floorModel;
  const runnerCpu = (level: typeof level1) => level?.cpu.find((c) => c.process === "runner")?.perTurnMs ?? Number.NaN;
  const clusterCpu = (level: typeof level1) =>
    (level?.cpu ?? []).filter((c) => c.process !== "bench client").reduce((sum, c) => sum + c.perTurnMs, 0);

  if (level1 && floor && level1.runtime) {
    const runnerCpu1 = runnerCpu(level1);
    const cpuBound = runnerCpu1 > 0.4 * level1.runtime.p50;
    lines.push(
      `**${cpuBound ? "Latency is mostly the runner's own CPU, not the network." : "Latency is mostly waiting on hops."}** At c=1 the runner's turn takes ${f(level1.runtime.p50)} ms (p50) against a floor of ${f(floor.runnerFloorMs)} ms (${floor.runnerRtts} round trips × ${f(floor.rttMs)} ms + ${f(floor.eventPersistMs)} ms of event persistence); the runner alone burns ${f(runnerCpu1)} ms of CPU per turn (/proc), the workers ${f(level1.cpu.filter((c) => c.process.startsWith("worker")).reduce((s, c) => s + c.perTurnMs, 0))} ms between them, nats-server ${f(level1.cpu.find((c) => c.process === "nats-server")?.perTurnMs ?? Number.NaN)} ms. Each hop costs several times the bare round trip (see the step table): the time is spent encoding, validating and dispatching around each request, on both sides.`,
    );
  }
  if (level1 && lg1 && floor) {
    const needed = lg1.latency.p50 / 5;
    lines.push(
      `**The 5x p50 target needs a turn of ${f(needed)} ms** (LangGraph.js p50 ${f(lg1.latency.p50)} ms ÷ 5). The floor of this transport for this turn is ${f(floor.clientFloorMs)} ms client-side (${floor.clientRtts} round trips) — ${
        floor.clientFloorMs > needed
          ? `already ${f(floor.clientFloorMs / needed)}x above it: no runtime making ${floor.clientRtts} sequential NATS round trips plus durable events can meet this target against an in-process pipeline on the offline model (the latency-hiding run below puts a model's latency in the turn).`
          : "so the target is reachable only by cutting the runner's per-hop overhead to near the floor."
      }`,
    );
  }
  if (top && lgTop) {
    const conclaveCpu = clusterCpu(top);
    const lgCpu = lgTop.cpuPerTurnMs;
    lines.push(
      `**Throughput is bounded by CPU per turn.** At c=${top.sessions} Conclave's processes (runner, workers, nats-server) use ${f(conclaveCpu)} ms of CPU per turn in total, LangGraph.js ${f(lgCpu)} ms in its one process. With two cores that caps Conclave near ${f(2_000 / conclaveCpu, 0)} turns/s (measured ${f(top.turnsPerSec, 0)}; the bench client takes its share of the same two cores) and LangGraph.js near ${f(1_000 / lgCpu, 0)} turns/s on its single thread (measured ${f(lgTop.turnsPerSec, 0)}). A 5x throughput lead on two cores needs Conclave's total CPU per turn at or below ${f((2 * lgCpu) / 5)} ms (2 cores × LangGraph's ${f(lgCpu)} ms ÷ 5): it is ${f(conclaveCpu / ((2 * lgCpu) / 5))}x that today. The runner is the busiest process (${f(top.cpu.find((c) => c.process === "runner")?.cores ?? Number.NaN)} cores).`,
    );
  }
  return lines;
}
