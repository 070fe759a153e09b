/**
 * `npm run bench`: Conclave's distributed turn against the same pipeline in
 * LangGraph.js, and against the transport's floor, in one invocation.
 * Progress goes to stderr; the report to docs/BENCHMARKS.md, its main figures to
 * docs/benchmarks-summary.json (both committed) and every result to
 * docs/benchmarks.json (git-ignored). Exits non-zero only when the bench could
 * not run, never because of a number.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { neutralModulators, neutralStance } from "../src/contracts/workspace.ts";
import { REPO_ROOT } from "../src/nats/server.ts";
import { runBusyDay } from "./busyDay.ts";
import { renderBusyDay } from "./busyDayReport.ts";
import { runClusterScaling } from "./clusterScaling.ts";
import { clusterScalingFromFile, renderClusterScaling, spliceClusterSection } from "./clusterScalingReport.ts";
import { durabilityOnly, runDurability } from "./durability.ts";
import { DURABILITY_MARKERS, type DurabilityRun, durabilityTargets, renderDurability } from "./durabilityReport.ts";
import { describeEnvironment } from "./environment.ts";
import { type InProcessPipeline, type InProcessResult, runInProcess } from "./inprocess.ts";
import { knowledgeOnly, runKnowledge } from "./knowledge.ts";
import { KNOWLEDGE_MARKERS, type KnowledgeRun, knowledgeTargets, renderKnowledge } from "./knowledgeReport.ts";
import { langGraphPipeline } from "./langgraph.ts";
import { runLatencyHiding } from "./latencyHiding.ts";
import { keepHandWritten, spliceSection, targetsTable } from "./markdown.ts";
import { runMemoryRetrieval } from "./memoryRetrieval.ts";
import { checkParity } from "./parity.ts";
import { type BenchPlan, benchPlan } from "./plan.ts";
import { type BenchPostgres, type PostgresSaverSetup, postgresStarted, startBenchPostgres } from "./postgresSaver.ts";
import { cpuTimeMs, machineBusyMs, processMemory } from "./procfs.ts";
import { progress } from "./progress.ts";
import { type BenchResults, renderReport } from "./report.ts";
import { type ConclaveRun, runConclaveScenario } from "./runConclave.ts";
import { renderScale, scaleFromFile, scaleTargets, spliceScaleSection, targetLines } from "./scaleReport.ts";
import { runScaleSlices } from "./scaleSlices.ts";
import { SCENARIOS, type Scenario } from "./scenarios.ts";
import { benchSummaryJson } from "./summary.ts";
import { floorModel, judgeTargets, type Target, tracingTargets } from "./targets.ts";
import { runTracingCost, type TracingCostRun } from "./tracingCost.ts";
import { renderTracingCost } from "./tracingReport.ts";
import { runUnderLoad } from "./underLoad.ts";
import { renderUnderLoad, UNDER_LOAD_SECTION_END, UNDER_LOAD_SECTION_START } from "./underLoadReport.ts";
import { USAGE } from "./usage.ts";
import { xstateLocalPipeline } from "./xstateLocal.ts";

const DOCS = join(REPO_ROOT, "docs");
/** Every result of a run: the input of --render, not committed. */
const RESULTS_JSON = join(DOCS, "benchmarks.json");
/** The cluster scaling phase's results (committed): its section of the report is rendered from it. */
const CLUSTER_JSON = join(DOCS, "benchmarks-cluster.json");
/** The CPU-slice scaling phase's results (committed), likewise. */
const SCALE_JSON = join(DOCS, "benchmarks-scale.json");

const QUIET_CORES = 0.25;
const QUIET_WAIT_S = Number(process.env.BENCH_QUIET_WAIT_S ?? 60);

/** CPU used by every process but this one over one second, in cores. */
async function backgroundLoad(): Promise<number> {
  const machine = machineBusyMs();
  const own = cpuTimeMs(process.pid);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  return Math.round(Math.max(0, machineBusyMs() - machine - (cpuTimeMs(process.pid) - own)) / 10) / 100;
}

/**
 * The same turn, in the bench's own process: LangGraph.js without a checkpointer, with a
 * MemorySaver and (when PostgreSQL could be started) with a PostgresSaver, and the statechart.
 */
async function inProcessPipelines(scenario: Scenario, postgres: BenchPostgres | null): Promise<InProcessPipeline[]> {
  const start = { modulators: neutralModulators(), stance: neutralStance() };
  return [
    langGraphPipeline(scenario.services(), { checkpointer: false }, start),
    langGraphPipeline(scenario.services(), { checkpointer: true }, start),
    ...(postgres ? [await postgres.pipeline(scenario.services(), start)] : []),
    xstateLocalPipeline(scenario.services(), start),
  ];
}

const closeAll = (pipelines: InProcessPipeline[]) => Promise.all(pipelines.map((p) => p.close?.()));

/** The in-process pipelines of one scenario, PostgreSQL started for PostgresSaver and stopped after. */
async function runInProcessPipelines(
  scenario: Scenario,
  plan: BenchPlan,
  tag: string,
): Promise<{ entry: BenchResults["inProcess"][number]; postgres: PostgresSaverSetup }> {
  const started = await startBenchPostgres();
  const postgres = postgresStarted(started) ? started : null;
  try {
    const forParity = await inProcessPipelines(scenario, postgres);
    const parity = await checkParity(forParity, plan.texts).finally(() => closeAll(forParity));
    progress(
      `parity: ${forParity
        .filter((p) => p.name.startsWith("LangGraph"))
        .map((p) => p.name)
        .join(", ")} and the turn statechart gave the same reply in ${parity.identical} of ${parity.turns} turns`,
    );
    const results: InProcessResult[] = [];
    for (const pipeline of await inProcessPipelines(scenario, postgres)) {
      try {
        results.push(await runInProcess(pipeline, plan, `${tag}-${scenario.id}-inproc`));
      } finally {
        await pipeline.close?.();
      }
    }
    return { entry: { scenario: scenario.id, parity, pipelines: results }, postgres: started.setup };
  } finally {
    await postgres?.stop();
  }
}

/**
 * Every target of a run, judged on its results: the fast path's, then the busy day's. `--render`
 * judges again, so an older results file shows the current targets ("not measured" where it lacks a figure).
 */
function judgeAll(results: Omit<Results, "targets"> & { targets?: Target[] }): Target[] {
  const main = results.conclave[0]!;
  const inProcess = results.inProcess.find((s) => s.scenario === main.scenario)?.pipelines ?? [];
  const busyDay =
    results.busyDay?.targets ?? (results.targets ?? []).filter((t) => /^(busy|idle|takeover)-/.test(t.id));
  const underLoad = results.underLoad?.targets ?? (results.targets ?? []).filter((t) => /^load-/.test(t.id));
  return [
    ...judgeTargets(main, inProcess, { postgresSaver: results.postgresSaver, tracing: results.tracing }),
    ...busyDay,
    ...underLoad,
    ...(results.durability ? durabilityTargets(results.durability) : []),
    ...(results.knowledge ? knowledgeTargets(results.knowledge) : []),
  ];
}

/** A run's results with the durability (issue 37) and knowledge (issue 39) sections', rendered apart from report.ts. */
type Results = BenchResults & { durability?: DurabilityRun; knowledge?: KnowledgeRun };

/** The tracing phase; a failure is reported, not fatal. */
async function tracingPhase(plan: BenchPlan, tag: string): Promise<TracingCostRun | { error: string }> {
  try {
    return await runTracingCost(plan, tag);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    progress(`tracing cost: the phase failed: ${message}`);
    return { error: message };
  }
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
  let postgresSaver: PostgresSaverSetup | undefined;
  for (const scenario of SCENARIOS) {
    conclave.push(await runConclaveScenario(scenario, plan, tag));
    const { entry, postgres } = await runInProcessPipelines(scenario, plan, tag);
    inProcess.push(entry);
    postgresSaver ??= postgres;
  }
  const tracing = await tracingPhase(plan, tag);
  const latencyHiding = await runLatencyHiding(plan, tag);
  const memoryRetrieval = await runMemoryRetrieval(plan);
  const knowledge = await runKnowledge(plan);
  const busyDay = await runBusyDay(plan, tag);
  const underLoad = await runUnderLoad(plan, tag);
  const durability = await runDurability(plan, tag);
  const main = conclave[0]!;
  const measured = {
    durability,
    knowledge,
    latencyHiding,
    memoryRetrieval,
    busyDay,
    underLoad,
    command: "npm run bench",
    environment,
    plan,
    durationS: Math.round((performance.now() - startedAt) / 1000),
    backgroundAtStartCores,
    conclave,
    inProcess,
    floorModel: floorModel(main),
    benchPeakRssKb: processMemory(process.pid)?.peakRssKb ?? Number.NaN,
    ...(postgresSaver ? { postgresSaver } : {}),
    tracing,
  };
  const results: Results = { ...measured, targets: judgeAll(measured) };
  mkdirSync(DOCS, { recursive: true });
  writeFileSync(RESULTS_JSON, `${JSON.stringify(results, null, 2)}\n`);
  writeReports(results);
  progress(`done in ${results.durationS} s: docs/BENCHMARKS.md, docs/benchmarks-summary.json, docs/benchmarks.json`);
  printRatios(main, inProcess[0]?.pipelines ?? []);
  for (const target of results.targets) progress(`target ${target.id}: ${target.verdict}`);
}

/** The committed outputs of a run: the report and its summary. */
function writeReports(results: Results): void {
  const report = join(DOCS, "BENCHMARKS.md");
  const previous = existsSync(report) ? readFileSync(report, "utf8") : "";
  writeFileSync(report, renderReport(results));
  // The cluster scaling phase runs apart (--cluster): its last section is kept.
  const cluster = clusterScalingFromFile(CLUSTER_JSON);
  if (cluster) spliceClusterSection(join(DOCS, "BENCHMARKS.md"), cluster);
  const scale = scaleFromFile(SCALE_JSON);
  if (scale) spliceScaleSection(join(DOCS, "BENCHMARKS.md"), scale);
  spliceSection(join(DOCS, "BENCHMARKS.md"), renderDurability(results.durability), ...DURABILITY_MARKERS);
  spliceSection(join(DOCS, "BENCHMARKS.md"), renderKnowledge(results.knowledge), ...KNOWLEDGE_MARKERS);
  // The readings written by hand outlive the run that rewrites the numbers they read.
  writeFileSync(report, keepHandWritten(previous, readFileSync(report, "utf8")));
  writeFileSync(join(DOCS, "benchmarks-summary.json"), benchSummaryJson(results));
}

/**
 * `--only busy-day`: the busy-day phases alone, to try them without the whole bench. Their
 * section of the report goes to stdout and their results to a temporary file: a partial,
 * usually noisy run must not replace the committed report.
 */
async function busyDayOnly(): Promise<void> {
  const plan = benchPlan();
  const startedAt = performance.now();
  const environment = describeEnvironment();
  progress(
    `busy day only: ${environment.cores} cores; ${plan.busyDay.sessions} sessions, ${plan.busyDay.idleSteps.join(" and ")} idle, ${plan.busyDay.kills} kills${plan.quick ? " (BENCH_QUICK: short phases)" : ""}`,
  );
  const busyDay = await runBusyDay(plan, `b${Date.now().toString(36)}`);
  const path = join(tmpdir(), `conclave-bench-busy-day-${Date.now()}.json`);
  writeFileSync(path, `${JSON.stringify({ environment, plan, busyDay }, null, 2)}\n`);
  process.stdout.write(`## Targets\n\n${targetsTable(busyDay.targets)}\n\n${renderBusyDay(busyDay, plan)}\n`);
  progress(`done in ${Math.round((performance.now() - startedAt) / 1000)} s; results in ${path}`);
  for (const target of busyDay.targets) progress(`target ${target.id}: ${target.verdict}`);
}

/**
 * `--only under-load`: the under-load phases alone (issue 42), their section and targets on
 * stdout, their results in a temporary file. A full-size run (not BENCH_QUICK) replaces the
 * section, with its own targets table, in docs/BENCHMARKS.md.
 */
async function underLoadOnly(): Promise<void> {
  const plan = benchPlan();
  const startedAt = performance.now();
  const p = plan.underLoad;
  progress(
    `under load only: ${p.burstRuns} bursts of ${p.burstSessions} sessions, a soak of ${p.soakTurns} turns from ${p.soakClients} sessions, ${p.kills} kills with ${p.inFlight} turns in flight${plan.quick ? " (BENCH_QUICK: short phases)" : ""}`,
  );
  const underLoad = await runUnderLoad(plan, `b${Date.now().toString(36)}`);
  const environment = describeEnvironment();
  const path = join(tmpdir(), `conclave-bench-under-load-${Date.now()}.json`);
  writeFileSync(path, `${JSON.stringify({ environment, plan, underLoad }, null, 2)}\n`);
  const ran = `Run alone (\`npm run bench -- --only under-load\`) at ${environment.commit}, ${environment.date.slice(0, 10)}, on ${environment.cores} cores (${environment.cpuModel}).`;
  const section = renderUnderLoad(underLoad, p, `${ran}\n\n${targetsTable(underLoad.targets)}`);
  process.stdout.write(`${section}\n`);
  // A full-size run replaces its own section of the report; a quick one only prints it.
  if (!plan.quick)
    spliceSection(join(DOCS, "BENCHMARKS.md"), section, UNDER_LOAD_SECTION_START, UNDER_LOAD_SECTION_END);
  progress(
    `done in ${Math.round((performance.now() - startedAt) / 1000)} s; results in ${path}${plan.quick ? "; docs/ left alone (BENCH_QUICK)" : "; its section of docs/BENCHMARKS.md replaced"}`,
  );
  for (const target of underLoad.targets) progress(`target ${target.id}: ${target.verdict}`);
}

/**
 * `--only tracing`: the tracing-cost phase alone (about a minute), its section and targets on
 * stdout, its results in a temporary file; docs/ is left alone.
 */
async function tracingOnly(): Promise<void> {
  const plan = benchPlan();
  const startedAt = performance.now();
  progress(`tracing cost only${plan.quick ? " (BENCH_QUICK: short phases)" : ""}`);
  const tracing = await tracingPhase(plan, `b${Date.now().toString(36)}`);
  const path = join(tmpdir(), `conclave-bench-tracing-${Date.now()}.json`);
  writeFileSync(path, `${JSON.stringify({ environment: describeEnvironment(), plan, tracing }, null, 2)}\n`);
  const targets = tracingTargets(tracing);
  process.stdout.write(`## Targets\n\n${targetsTable(targets)}\n\n${renderTracingCost(tracing)}\n`);
  progress(`done in ${Math.round((performance.now() - startedAt) / 1000)} s; results in ${path}`);
  for (const target of targets) progress(`target ${target.id}: ${target.verdict}`);
}

/**
 * `--cluster`: the cluster scaling phase alone. Its results go to docs/benchmarks-cluster.json and
 * its section replaces only its own in docs/BENCHMARKS.md; a smoke run prints the section only.
 */
async function clusterOnly(): Promise<void> {
  const run = await runClusterScaling(benchPlan(), `b${Date.now().toString(36)}`);
  const section = renderClusterScaling(run);
  if (run.plan.smoke) {
    const path = join(tmpdir(), `conclave-bench-cluster-${Date.now()}.json`);
    writeFileSync(path, `${JSON.stringify(run, null, 2)}\n`);
    process.stdout.write(`${section}\n`);
    progress(`smoke run done in ${run.durationS} s; results in ${path}; docs/ left alone`);
    return;
  }
  mkdirSync(DOCS, { recursive: true });
  writeFileSync(CLUSTER_JSON, `${JSON.stringify(run, null, 2)}\n`);
  spliceClusterSection(join(DOCS, "BENCHMARKS.md"), section);
  progress(`done in ${run.durationS} s: docs/benchmarks-cluster.json and its section of docs/BENCHMARKS.md`);
}

/** `--scale`: the CPU-slice phase alone, like `--cluster` (a smoke run prints and leaves docs/ alone). */
async function scaleOnly(): Promise<void> {
  const run = await runScaleSlices(benchPlan(), `s${Date.now().toString(36)}`);
  const targets = scaleTargets(run);
  const section = renderScale(run, targets);
  const path = run.plan.smoke ? join(tmpdir(), `conclave-bench-scale-${Date.now()}.json`) : SCALE_JSON;
  writeFileSync(path, `${JSON.stringify(run, null, 2)}\n`);
  if (run.plan.smoke) process.stdout.write(`${section}\n`);
  else spliceScaleSection(join(DOCS, "BENCHMARKS.md"), section);
  for (const line of targetLines(targets)) progress(line);
  progress(`done in ${run.durationS} s; results in ${path}${run.plan.smoke ? "; docs/ left alone (smoke)" : ""}`);
}

/**
 * `--render`: rewrite the report and its summary from docs/benchmarks.json (the same run), e.g. after
 * editing the report. The targets are judged again on the file's results.
 */
function renderOnly(): void {
  if (!existsSync(RESULTS_JSON)) throw new Error("no docs/benchmarks.json to render: run `npm run bench` first");
  const results = JSON.parse(readFileSync(RESULTS_JSON, "utf8")) as Results;
  writeReports({ ...results, targets: judgeAll(results) });
  progress("docs/BENCHMARKS.md and docs/benchmarks-summary.json rendered from docs/benchmarks.json");
}

/** The phase of `--only <phase>` or BENCH_ONLY, if any. */
function onlyPhase(): string | undefined {
  const at = process.argv.indexOf("--only");
  return at >= 0 ? (process.argv[at + 1] ?? "") : process.env.BENCH_ONLY || undefined;
}

try {
  if (process.argv.includes("--help") || process.argv.includes("-h")) process.stdout.write(USAGE);
  else if (process.argv.includes("--render")) renderOnly();
  else if (process.argv.includes("--cluster")) await clusterOnly();
  else if (process.argv.includes("--scale")) await scaleOnly();
  else if (onlyPhase() === "busy-day") await busyDayOnly();
  else if (onlyPhase() === "under-load") await underLoadOnly();
  else if (onlyPhase() === "tracing") await tracingOnly();
  else if (onlyPhase() === "durability") await durabilityOnly(benchPlan(), join(DOCS, "BENCHMARKS.md"));
  else if (onlyPhase() === "knowledge") await knowledgeOnly(benchPlan(), join(DOCS, "BENCHMARKS.md"));
  else if (onlyPhase() !== undefined)
    throw new Error(
      `unknown --only ${onlyPhase()}: the phases are busy-day, under-load, tracing, durability and knowledge`,
    );
  else await main();
  process.exit(0);
} catch (error) {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
}
