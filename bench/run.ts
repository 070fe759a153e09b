/**
 * `npm run bench`: Conclave's distributed turn against the same pipeline in
 * LangGraph.js, and against the transport's floor, in one invocation.
 * Progress goes to stderr; results to docs/BENCHMARKS.md and docs/benchmarks.json.
 * Exits non-zero only when the bench could not run, never because of a number.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { neutralModulators, neutralStance } from "../src/contracts/workspace.ts";
import { REPO_ROOT } from "../src/nats/server.ts";
import { describeEnvironment } from "./environment.ts";
import { type InProcessResult, runInProcess } from "./inprocess.ts";
import { langGraphPipeline } from "./langgraph.ts";
import { runLatencyHiding } from "./latencyHiding.ts";
import { runMemoryRetrieval } from "./memoryRetrieval.ts";
import { checkParity } from "./parity.ts";
import { benchPlan } from "./plan.ts";
import { cpuTimeMs, machineBusyMs, processMemory } from "./procfs.ts";
import { progress } from "./progress.ts";
import { type BenchResults, renderReport } from "./report.ts";
import { type ConclaveRun, runConclaveScenario } from "./runConclave.ts";
import { SCENARIOS, type Scenario } from "./scenarios.ts";
import { floorModel, judgeTargets } from "./targets.ts";
import { xstateLocalPipeline } from "./xstateLocal.ts";

const QUIET_CORES = 0.25;
const QUIET_WAIT_S = Number(process.env.BENCH_QUIET_WAIT_S ?? 60);

/** CPU used by every process but this one over one second, in cores. */
async function backgroundLoad(): Promise<number> {
  const machine = machineBusyMs();
  const own = cpuTimeMs(process.pid);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  return Math.round(Math.max(0, machineBusyMs() - machine - (cpuTimeMs(process.pid) - own)) / 10) / 100;
}

/** The same turn, in the bench's own process: LangGraph.js without and with a checkpointer, and the statechart. */
function inProcessPipelines(scenario: Scenario) {
  const start = { modulators: neutralModulators(), stance: neutralStance() };
  return [
    langGraphPipeline(scenario.services(), { checkpointer: false }, start),
    langGraphPipeline(scenario.services(), { checkpointer: true }, start),
    xstateLocalPipeline(scenario.services(), start),
  ];
}

/** One line per level: Conclave's turns/s and p50 against each LangGraph.js variant's. */
function printRatios(main: ConclaveRun, pipelines: InProcessResult[]): void {
  for (const level of main.levels) {
    const ratios = pipelines
      .filter((p) => p.name.startsWith("LangGraph"))
      .map((p) => {
        const theirs = p.levels.find((l) => l.sessions === level.sessions);
        return theirs
          ? `vs ${p.name}: turns/s ${(level.turnsPerSec / theirs.turnsPerSec).toFixed(2)}x, p50 ${(theirs.latency.p50 / level.latency.p50).toFixed(2)}x`
          : "";
      });
    progress(
      `c=${level.sessions}: Conclave ${level.turnsPerSec} turns/s, p50 ${level.latency.p50} ms; ${ratios.join("; ")}`,
    );
  }
}

async function main(): Promise<void> {
  const startedAt = performance.now();
  const plan = benchPlan();
  const tag = `b${Date.now().toString(36)}`;
  const environment = describeEnvironment();
  progress(
    `${environment.cpuModel}, ${environment.cores} cores, ${environment.memoryGiB} GiB; node ${environment.versions.node}, nats-server ${environment.versions["nats-server"]}${plan.quick ? " (BENCH_QUICK: short phases)" : ""}`,
  );
  // Other work on a 2-core machine moves every number: wait a little for it to pass, then run anyway and say so.
  let backgroundAtStartCores = await backgroundLoad();
  for (let waited = 0; backgroundAtStartCores > QUIET_CORES && waited < QUIET_WAIT_S; waited += 5) {
    progress(
      `other processes use ${backgroundAtStartCores} cores; waiting for a quieter machine (${waited} s of ${QUIET_WAIT_S} s)`,
    );
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    backgroundAtStartCores = await backgroundLoad();
  }
  if (backgroundAtStartCores > QUIET_CORES)
    progress(`warning: other processes use ${backgroundAtStartCores} cores; the report will say so`);
  const conclave: ConclaveRun[] = [];
  const inProcess: BenchResults["inProcess"] = [];
  for (const scenario of SCENARIOS) {
    conclave.push(await runConclaveScenario(scenario, plan, tag));
    const parity = await checkParity(inProcessPipelines(scenario), plan.texts);
    progress(
      `parity: LangGraph.js (with and without MemorySaver) and the turn statechart gave the same reply in ${parity.identical} of ${parity.turns} turns`,
    );
    const results: InProcessResult[] = [];
    for (const pipeline of inProcessPipelines(scenario)) {
      results.push(await runInProcess(pipeline, plan, `${tag}-${scenario.id}-inproc`));
    }
    inProcess.push({ scenario: scenario.id, parity, pipelines: results });
  }
  const latencyHiding = await runLatencyHiding(plan, tag);
  const memoryRetrieval = await runMemoryRetrieval(plan);
  const main = conclave[0]!;
  const results: BenchResults = {
    latencyHiding,
    memoryRetrieval,
    command: "npm run bench",
    environment,
    plan,
    durationS: Math.round((performance.now() - startedAt) / 1000),
    backgroundAtStartCores,
    conclave,
    inProcess,
    floorModel: floorModel(main),
    targets: judgeTargets(main, inProcess[0]?.pipelines ?? []),
    benchPeakRssKb: processMemory(process.pid)?.peakRssKb ?? Number.NaN,
  };
  const docs = join(REPO_ROOT, "docs");
  mkdirSync(docs, { recursive: true });
  writeFileSync(join(docs, "benchmarks.json"), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(docs, "BENCHMARKS.md"), renderReport(results));
  progress(`done in ${results.durationS} s: docs/BENCHMARKS.md, docs/benchmarks.json`);
  printRatios(main, inProcess[0]?.pipelines ?? []);
  for (const target of results.targets) progress(`target ${target.id}: ${target.verdict}`);
}

/** `--render`: rewrite docs/BENCHMARKS.md from docs/benchmarks.json (the same run), e.g. after editing the report. */
function renderOnly(): void {
  const docs = join(REPO_ROOT, "docs");
  const results = JSON.parse(readFileSync(join(docs, "benchmarks.json"), "utf8")) as BenchResults;
  writeFileSync(join(docs, "BENCHMARKS.md"), renderReport(results));
  progress("docs/BENCHMARKS.md rendered from docs/benchmarks.json");
}

try {
  if (process.argv.includes("--render")) renderOnly();
  else await main();
  process.exit(0);
} catch (error) {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
}
