import type { BusyDayRun } from "./busyDay.ts";
import { renderBusyDay } from "./busyDayReport.ts";
import { clusterCores, clusterCpuPerTurnMs } from "./conclave.ts";
import type { Environment } from "./environment.ts";
import type { InProcessLevel, InProcessResult } from "./inprocess.ts";
import type { LatencyHidingRun } from "./latencyHiding.ts";
import { DISTURBED_CORES } from "./load.ts";
import { esc, ms, pct, profileTable, table, targetsTable, x } from "./markdown.ts";
import type { MemoryRetrievalRun } from "./memoryRetrieval.ts";
import type { Parity } from "./parity.ts";
import type { BenchPlan } from "./plan.ts";
import { POSTGRES_SAVER_PIPELINE, type PostgresSaverSetup } from "./postgresSaver.ts";
import { readingOfTheNumbers } from "./reading.ts";
import type { ConclaveRun } from "./runConclave.ts";
import { round, type Summary } from "./stats.ts";
import { FAST_PATH_GOALS, type FloorModel, type Target } from "./targets.ts";
import type { TracingCostRun } from "./tracingCost.ts";
import { renderTracingCost } from "./tracingReport.ts";
import type { UnderLoadRun } from "./underLoad.ts";
import { renderUnderLoad } from "./underLoadReport.ts";

export interface BenchResults {
  command: string;
  environment: Environment;
  plan: BenchPlan;
  durationS: number;
  /** CPU used by processes outside the bench just before it started, in cores. */
  backgroundAtStartCores: number;
  conclave: ConclaveRun[];
  inProcess: { scenario: string; parity: Parity; pipelines: InProcessResult[] }[];
  floorModel: FloorModel | null;
  targets: Target[];
  benchPeakRssKb: number;
  /** The turn in LLM mode against a model that answers after 50 ms (absent in older runs). */
  latencyHiding?: LatencyHidingRun;
  /** A turn's memory retrieval with 10 000 nodes in the session's graph (absent in older runs). */
  memoryRetrieval?: MemoryRetrievalRun;
  /** "A busy day": overload, idle sessions, takeovers (absent in older runs); its targets are in `targets` too. */
  busyDay?: BusyDayRun;
  /** "Under load" (issue 42): bursts, a soak, takeovers with turns in flight (absent in older runs); its targets are in `targets` too. */
  underLoad?: UnderLoadRun;
  /** The PostgreSQL behind LangGraph.js + PostgresSaver, or why there was none (absent in older runs). */
  postgresSaver?: PostgresSaverSetup;
  /** Tracing off and on at c=1, or why the phase failed (absent in older runs). */
  tracing?: TracingCostRun | { error: string };
}

const mib = (kb: number) => (Number.isNaN(kb) ? "–" : `${round(kb / 1024, 1)}`);
const latencyCells = (s: Summary) => [ms(s.p50), ms(s.p95), ms(s.p99), ms(s.mean)];

function machineSection(env: Environment, results: BenchResults): string {
  const backgrounds = results.conclave.flatMap((run) => run.levels.map((level) => level.backgroundCores));
  const inProcessBackgrounds = results.inProcess.flatMap((s) =>
    s.pipelines.flatMap((p) => p.levels.map((l) => l.backgroundCores)),
  );
  const tracingBackground = results.tracing && !("error" in results.tracing) ? results.tracing.backgroundCores : 0;
  const worst = Math.max(0, ...backgrounds, ...inProcessBackgrounds, tracingBackground);
  return [
    "## Machine and versions",
    "",
    table(
      ["", ""],
      [
        ["CPU", env.cpuModel],
        ["cores", env.cores],
        ["memory", `${env.memoryGiB} GiB`],
        ["kernel", env.kernel],
        ...Object.entries(env.versions).map(([name, version]) => [name, version]),
        ["commit", env.commit],
        ["date", env.date],
        [
          "command",
          `\`${results.command}\`${results.plan.quick ? " with `BENCH_QUICK=1` (short phases: noisy numbers)" : ""}`,
        ],
        ["duration", `${results.durationS} s`],
      ],
    ),
    "",
    `Other work on the machine (CPU used by processes outside the bench): ${results.backgroundAtStartCores} cores just before the run, at most ${round(worst, 2)} cores during a measured level. ${
      worst > 0.25
        ? "**The machine was not idle during this run: every number below is affected; rerun on a quiet machine to compare with other runs.**"
        : "The machine was quiet."
    }`,
  ].join("\n");
}

/** What the report says about LangGraph.js + PostgresSaver's database, or why it is missing. */
function postgresSaverLine(inProcess: InProcessResult[], setup: PostgresSaverSetup | undefined): string {
  if (inProcess.some((p) => p.name === POSTGRES_SAVER_PIPELINE) && setup?.available)
    return ` With a \`PostgresSaver\` (@langchain/langgraph-checkpoint-postgres) too: a PostgreSQL the bench starts on a free loopback port with a temporary data directory (PostgreSQL ${esc(setup.version ?? "of unknown version")}; ${Object.entries(
      setup.settings ?? {},
    )
      .map(([name, value]) => `\`${name}=${value}\``)
      .join(
        ", ",
      )}, as in the test suite: JetStream does not fsync each write either, so neither side pays a disk flush per checkpoint or event), a node-postgres pool of ${setup.poolMax} connections (the default \`PostgresSaver.fromConnString\` gets); its CPU per turn adds the PostgreSQL processes' (the postmaster and its backends, from /proc) to the bench process's.`;
  if (setup && !setup.available)
    return ` **LangGraph.js + PostgresSaver was not measured**: ${esc(setup.reason ?? "PostgreSQL could not be started")}; its targets are "not measured".`;
  return " LangGraph.js + PostgresSaver is not in this run (made before the bench measured it).";
}

function setupSection(
  run: ConclaveRun,
  plan: BenchPlan,
  inProcess: InProcessResult[],
  parity?: Parity,
  postgres?: PostgresSaverSetup,
): string {
  const conclave1 = run.levels.find((l) => l.sessions === 1);
  return [
    "## What runs",
    "",
    `- **Conclave (distributed)**: a nats-server the bench starts (free port, temporary JetStream store), a runner and three workers, each its own process, as \`conclave up\` lays them out (${run.processes
      .map((p) => `\`${p.name}\``)
      .join(
        ", ",
      )}). The offline model (zero model latency). The durable event log is on (it always is): every event of every turn is stored in its session's \`CONCLAVE_EVENTS_<i>\` stream. The client uses the public protocol: a request on \`conclave.turn.submit.<session>\`, then \`watchTurn\` follows the turn's events in JetStream until \`TURN_COMPLETED\`. Latency is submit → \`TURN_COMPLETED\` seen by the client; the runner's own \`total_time_ms\` (TURN_STARTED → TURN_COMPLETED on the runner's clock) is shown beside it to separate the client's observation cost.`,
    `- **The turn**: all nine stages (ingest, sensing_fast, context, agents in ${run.breakdown.shape.agentsPerWave.length} waves of ${run.breakdown.shape.agentsPerWave.join(" and ")} agents, deliberation (${run.breakdown.shape.rounds} round${run.breakdown.shape.rounds === 1 ? "" : "s"}), council + voice, critics (${run.breakdown.shape.criticVerdicts} verdict${run.breakdown.shape.criticVerdicts === 1 ? "" : "s"}), memory_commit), ${run.breakdown.shape.events} events per turn (medians over the traced turns; ${conclave1 ? round(conclave1.events / Math.max(1, conclave1.turns), 1) : "?"} seen per turn by the client on average). Messages, round-robin: ${plan.texts.map((t) => `"${t}"`).join(", ")}.`,
    `- **LangGraph.js (in-process)**: the same stages as a \`StateGraph\` (bench/langgraph.ts): ingest → sensing_fast → context → plan → wave 0 and wave 1 as \`Send\` fan-outs of one \`agent\` node, each followed by \`merge_wave\` → deliberation (a loop, ≤ 3 rounds, later rounds asking the stakeholder agents to revise) → council → voice → critics (looping back to the voice with the critics' feedback while retries remain) → memory_commit, every node calling the same stage logic (\`localTurnServices()\`: src/cognition and agents/). Run with and without a \`MemorySaver\` checkpointer (in memory), in the bench process, after the cluster has been stopped.${postgresSaverLine(inProcess, postgres)}${
      parity
        ? ` Same computation: with the same messages in the same order, every LangGraph.js variant and the turn statechart gave the same reply in ${parity.identical} of ${parity.turns} turns${parity.firstDifference ? ` (first difference at turn ${parity.firstDifference.turn}: ${parity.firstDifference.replies.map((r) => JSON.stringify(r)).join(" vs ")})` : ""}.`
        : ""
    }`,
    `- **Reference, not a target**: ${inProcess.find((p) => !p.name.startsWith("LangGraph"))?.name ?? "the turn statechart in-process"}: \`provideTurn(localTurnServices(), …)\` in the bench process, events kept in memory. It shows what the statechart itself costs, without NATS.`,
    `- **Load**: closed loop. Each session sends its turns back to back (the next when the previous completed); ${plan.levels.join(", ")} sessions run at once. Before anything is measured: ${plan.warmupTurns} warm-up turns for Conclave, ${plan.inProcessWarmupTurns} for each in-process pipeline; each level then runs ${plan.levelWarmupMs} ms unmeasured and ${plan.levelMs} ms measured (turns in flight at the end finish and count). A level during which other processes used more than ${DISTURBED_CORES} cores is measured once more and the quieter attempt kept.`,
  ].join("\n");
}

function targetsSection(targets: Target[]): string {
  const g = FAST_PATH_GOALS;
  return [
    "## Targets",
    "",
    `On a 2-core machine, in the same run ("the fast path"): Conclave's distributed turn, durable event log on, has a p50 at one session (client: submit → \`TURN_COMPLETED\`) no higher than LangGraph.js's in memory without a checkpointer, at most a third of LangGraph.js + MemorySaver's, and within ${g.p50VsFloor}x of the floor; it takes at most ${g.clientRoundTrips} sequential round trips from submit to \`TURN_COMPLETED\`; at 100 sessions it completes at least ${g.throughputVsInMemory}x the turns/s of the faster in-memory LangGraph.js variant, using at most ${g.cpuPerTurnMs} ms of CPU per turn across all its processes and nats-server. Against LangGraph.js + PostgresSaver (a durable checkpointer, like Conclave's event log): at least ${g.p50VsPostgresSaver}x lower p50 at one session and ${g.throughputVsPostgresSaver}x the throughput at 100. Tracing costs nothing measurable when off (under ${g.tracingOffSharePct}% of p50) and adds under ${g.tracingOnAddedPct}% to p50 when on. A target a run could not measure (no PostgreSQL, tracing not on) says so.${
      targets.some((t) => /^(busy|idle|takeover)-/.test(t.id))
        ? " The busy-day targets (overload, idle sessions, takeover) follow; their measurements are in [A busy day](#a-busy-day)."
        : ""
    }${
      targets.some((t) => t.id.startsWith("load-"))
        ? " Then issue 42's (a burst, a soak, takeovers with turns in flight); their measurements are in [Under load (issue 42)](#under-load-issue-42)."
        : ""
    }`,
    "",
    targetsTable(targets),
  ].join("\n");
}

function latencySection(run: ConclaveRun, inProcess: InProcessResult[]): string {
  const level1 = run.levels.find((l) => l.sessions === 1);
  if (!level1) return "";
  const conclaveP50 = level1.latency.p50;
  const rows: (string | number)[][] = [
    ["Conclave distributed: submit → TURN_COMPLETED seen by the client", ...latencyCells(level1.latency), "1x"],
  ];
  if (level1.runtime)
    rows.push([
      "Conclave distributed: runner's total_time_ms",
      ...latencyCells(level1.runtime),
      x(level1.runtime.p50 / conclaveP50),
    ]);
  for (const pipeline of inProcess) {
    const level = pipeline.levels.find((l) => l.sessions === 1);
    if (level) rows.push([pipeline.name, ...latencyCells(level.latency), x(level.latency.p50 / conclaveP50)]);
  }
  return [
    "## Latency per turn (one session, turns back to back)",
    "",
    table(["system", "p50 ms", "p95 ms", "p99 ms", "mean ms", "p50 ÷ Conclave p50"], rows),
  ].join("\n");
}

function throughputSection(run: ConclaveRun, inProcess: InProcessResult[]): string {
  const levels = run.levels.map((l) => l.sessions);
  const rows: (string | number)[][] = [];
  for (const level of run.levels) {
    rows.push([
      `Conclave distributed (runner: p50 ${ms(level.runtime?.p50)} ms)`,
      level.sessions,
      level.turnsPerSec,
      level.eventsPerSec,
      ...latencyCells(level.latency).slice(0, 3),
      level.turns,
      level.failed,
    ]);
  }
  for (const pipeline of inProcess) {
    for (const level of pipeline.levels) {
      rows.push([
        pipeline.name,
        level.sessions,
        level.turnsPerSec,
        level.events > 0 ? level.eventsPerSec : "–",
        ...latencyCells(level.latency).slice(0, 3),
        level.turns,
        level.failed,
      ]);
    }
  }
  const ratioRows = inProcess
    .filter((p) => p.name.startsWith("LangGraph"))
    .map((pipeline) => [
      pipeline.name,
      ...levels.flatMap((sessions) => {
        const ours = run.levels.find((l) => l.sessions === sessions);
        const theirs = pipeline.levels.find((l) => l.sessions === sessions);
        return ours && theirs
          ? [x(ours.turnsPerSec / theirs.turnsPerSec), x(theirs.latency.p50 / ours.latency.p50)]
          : ["–", "–"];
      }),
    ]);
  return [
    "## Throughput",
    "",
    table(["system", "sessions", "turns/s", "events/s", "p50 ms", "p95 ms", "p99 ms", "turns", "not Complete"], rows),
    "",
    "Conclave vs LangGraph.js, same run (above 1x Conclave is better: its turns/s ÷ theirs, their p50 ÷ Conclave's):",
    "",
    table(["LangGraph variant", ...levels.flatMap((s) => [`turns/s ratio c=${s}`, `p50 ratio c=${s}`])], ratioRows),
  ].join("\n");
}

function cpuSection(run: ConclaveRun, inProcess: InProcessResult[]): string {
  const names = run.levels[0]?.cpu.map((c) => c.process) ?? [];
  const rows = names.map((name) => [
    name,
    ...run.levels.flatMap((level) => {
      const use = level.cpu.find((c) => c.process === name);
      return [ms(use?.perTurnMs), use ? round(use.cores, 2) : "–"];
    }),
  ]);
  // The same figure as the CPU target and the summary (clusterCpuPerTurnMs).
  rows.push([
    "**all Conclave processes + nats-server (without the client)**",
    ...run.levels.flatMap((level) => [`**${ms(clusterCpuPerTurnMs(level))}**`, clusterCores(level)]),
  ]);
  rows.push([
    "other processes on the machine",
    ...run.levels.flatMap((level) => ["", round(level.backgroundCores, 2)]),
  ]);
  const lgRows = inProcess.map((p) => [
    p.name,
    ...p.levels.flatMap((level: InProcessLevel) => [
      level.serverCpuPerTurnMs === undefined
        ? ms(level.cpuPerTurnMs)
        : `${ms(level.cpuPerTurnMs)} (PostgreSQL ${ms(level.serverCpuPerTurnMs)})`,
      round(level.backgroundCores, 2),
    ]),
  ]);
  return [
    "## CPU per turn, by process",
    "",
    "From /proc/<pid>/stat (user + system, 10 ms ticks) over each measured level. `cores` is the CPU used divided by the level's wall time (1.0 = one core busy throughout); the machine has two.",
    "",
    table(["process", ...run.levels.flatMap((l) => [`ms/turn c=${l.sessions}`, `cores c=${l.sessions}`])], rows),
    "",
    "In-process pipelines (the bench process, plus PostgreSQL's processes for PostgresSaver, shown in brackets; `other` = CPU of everything else on the machine meanwhile, in cores):",
    "",
    table(
      [
        "pipeline",
        ...(inProcess[0]?.levels ?? []).flatMap((l) => [`ms/turn c=${l.sessions}`, `other c=${l.sessions}`]),
      ],
      lgRows,
    ),
  ].join("\n");
}

function memorySection(run: ConclaveRun, benchPeakRssKb: number): string {
  const rows = run.peakRss.map((p) => [p.process, p.pid, mib(p.peakRssKb), mib(p.rssKb)]);
  rows.push(["bench process at the end (after the in-process pipelines)", "", mib(benchPeakRssKb), ""]);
  const idle = run.idle;
  return [
    "## Memory",
    "",
    "Peak resident set (VmHWM from /proc/<pid>/status) of every process, read at the end of the Conclave runs:",
    "",
    table(["process", "pid", "peak RSS MiB", "RSS at end MiB"], rows),
    "",
    idle
      ? [
          `**Memory per idle session** (runner): ${round(idle.heapPerSessionBytes / 1024, 2)} KiB of JS heap per session (${round(idle.rssPerSessionBytes / 1024, 2)} KiB of RSS, which moves in whole pages and with the allocator, so trust the heap figure). Method: ${idle.method}; each step opens new sessions that do one turn each (50 at a time) and go idle, on top of the ${idle.existingSessions} sessions the earlier phases left idle. The last column is the runner's CPU over 2 s while no turn runs: what idle sessions cost in time rather than memory. Requests on the wire meanwhile (after the last step): ${
            idle.idleTraffic.length > 0
              ? idle.idleTraffic.map((t) => `${esc(t.subject)} ${t.perSecond}/s`).join(", ")
              : "none"
          }.`,
          "",
          table(
            ["sessions opened", "runner heapUsed MiB", "runner RSS MiB", "runner CPU while all idle (cores, 2 s)"],
            idle.readings.map((r) => [
              r.sessions,
              round(r.heapUsedBytes / 2 ** 20, 2),
              round(r.rssBytes / 2 ** 20, 1),
              round(r.idleRunnerCores, 3),
            ]),
          ),
        ].join("\n")
      : "",
  ].join("\n");
}

function floorSection(run: ConclaveRun, model: FloorModel | null): string {
  const floor = run.floor;
  const hops = run.hops;
  if (!floor || !model) return "";
  const level1 = run.levels.find((l) => l.sessions === 1);
  return [
    "## The floor",
    "",
    `Measured in the same run on the same nats-server, with the cluster idle: request/reply between two connections (${floor.requestBytes}-byte payload echoed), and JetStream publishes of ${floor.eventBytes}-byte messages (the turn's mean event size) to a stream configured like the event log (file storage, msgID dedup).`,
    "",
    table(
      ["", "p50 ms", "p95 ms", "p99 ms", "mean ms"],
      [
        ["NATS request/reply round trip (sequential)", ...latencyCells(floor.requestReply)],
        ["JetStream publish, each awaited (sequential)", ...latencyCells(floor.jsPublishSequential)],
        [
          `JetStream publish, pipelined (${floor.jsPublishPipelinedCount} fired, then all acks awaited): per event`,
          ms(floor.jsPublishPipelinedPerEventMs),
          "",
          "",
          "",
        ],
      ],
    ),
    "",
    `### The turn's sequential hops`,
    "",
    `Counted on the wire, not from a list kept by hand: ${hops.turns} turns ran one at a time (with a 50 ms pause after each, so the runner's bookkeeping of one turn does not spill into the next) while a wiretap — a \`>\` subscription of a bench-only NATS user — saw every request and reply. Requests whose request→reply intervals overlap run in parallel and make one hop (a wave's fan-out, the critics); a worker's own requests made while the runner waits (the memory worker reading JetStream) are nested round trips of that hop; the runner's requests made before it acks the submission are nested in the submission. The turn's event appends are pipelined (the turn never waits for them) and count as persistence; the bench client's consumer traffic and the runner's KV calls about other sessions are left out. The table shows one traced turn with the most common shape (${hops.turnsWithThisShape} of ${hops.turns}); the counts after it are medians over all ${hops.turns}.`,
    "",
    table(
      ["phase", "#", "hop", "requests", "nested round trips"],
      [
        [
          "submission",
          0,
          "turn.submit (client → runner); nested: what the runner does before it acks",
          1,
          hops.submit.rtts - 1 ? `${hops.submit.rtts - 1} (${esc(hops.submit.nestedLabel)})` : 0,
        ],
        ...hops.phases.flatMap((phase) =>
          phase.groups.map((g, i) => [
            i === 0 ? phase.phase : "",
            i + 1,
            esc(g.label),
            g.requests,
            g.nestedRtts ? `${g.nestedRtts} (${esc(g.nestedLabel)})` : 0,
          ]),
        ),
      ],
    ),
    "",
    `So between TURN_STARTED and TURN_COMPLETED a turn makes **${hops.hops} sequential hops** (${hops.turnRtts} round trips with the nested ones). Before that, the client's path holds ${hops.submit.rtts} round trips for the submission (the request and what the runner does before it acks) and ${hops.startRtts} between the ack and TURN_STARTED; ${hops.finishRtts} more come after TURN_COMPLETED, off the client's path. ${hops.eventAppends} event-log messages are stored, pipelined (the turn's events, in batches). Fast sensors run in the runner (no hop); a wave, or a group of critics, is one hop however many requests it fans out to.`,
    "",
    table(
      ["view", "round trips", "× RTT p50", "+ event persistence", "= floor ms", "measured p50 ms", "measured ÷ floor"],
      [
        [
          "client: submit → TURN_COMPLETED",
          model.clientRtts,
          ms(model.rttMs),
          `${hops.eventAppends} × ${ms(floor.jsPublishPipelinedPerEventMs)} = ${ms(model.eventPersistMs)}`,
          ms(model.clientFloorMs),
          ms(level1?.latency.p50),
          level1 ? x(level1.latency.p50 / model.clientFloorMs) : "–",
        ],
        [
          "runner: TURN_STARTED → TURN_COMPLETED",
          model.runnerRtts,
          ms(model.rttMs),
          ms(model.eventPersistMs),
          ms(model.runnerFloorMs),
          ms(level1?.runtime?.p50),
          level1?.runtime ? x(level1.runtime.p50 / model.runnerFloorMs) : "–",
        ],
      ],
    ),
    "",
    "Event persistence is costed as if the turn's events were pipelined back to back (their throughput cost); in the turn they overlap the hops, so the floor is generous to Conclave.",
  ].join("\n");
}

function breakdownSection(run: ConclaveRun, model: FloorModel | null): string {
  const b = run.breakdown;
  // Steps that end when a worker's reply arrives (the first reply of a fan-out, the first part of a stream).
  const hopTargets =
    /→ (MEMORY_RETRIEVED|SCHEDULE_PLANNED|agent reply 1 \(w\d+\)|CONSENSUS_UPDATED #\d+|COUNCIL_DECISION_MADE|STREAM_START|CRITICS_UPDATED( #\d+)?|MEMORY_COMMITTED)$/;
  const planned = b.steps.some((s) => s.name.endsWith("→ SCHEDULE_PLANNED"));
  const isHop = (name: string) =>
    hopTargets.test(name) ||
    (!planned && name === "stage agents → WAVE_STARTED w0") ||
    /^COUNCIL_DECISION_MADE → VOICE_RENDERED/.test(name);
  const hopMean = b.steps.filter((s) => isHop(s.name)).reduce((sum, s) => sum + s.meanMs, 0);
  const allMean = b.steps.reduce((sum, s) => sum + s.meanMs, 0);
  const steps = [...b.steps].sort((a, c) => c.meanMs - a.meanMs).slice(0, 20);
  return [
    `## Where a turn's time goes (c=1, ${b.turns} turns)`,
    "",
    `From the events' \`ts_monotonic\` (the runner's clock): the time between one \`TURN_STAGE_CHANGED\` and the next, and between every pair of consecutive events. The client's segments compare its own clock with the runner's (both \`performance.timeOrigin + performance.now()\`); measured over IPC (NTP-style), the two clocks differed by ${ms(b.runnerAheadMs)} ms, which is corrected for. The ack reaches the client after the turn has started (median submit → ack: ${ms(b.ackMedianMs)} ms), so it is not a boundary here.`,
    "",
    table(
      ["client's view", "median ms", "mean ms", "share"],
      b.client.map((s) => [s.name, ms(s.medianMs), ms(s.meanMs), pct(s.share)]),
    ),
    "",
    table(
      ["stage (runner)", "median ms", "mean ms", "share"],
      b.stages.map((s) => [s.name, ms(s.medianMs), ms(s.meanMs), pct(s.share)]),
    ),
    "",
    `Steps between consecutive events, largest mean first (**hop** = the step waits on a runner → worker request; the rest is the runner's own work between hops). Hops take ${ms(hopMean)} ms of the mean ${ms(allMean)} ms; ${
      model
        ? `at the floor's round trip (${ms(model.rttMs)} ms) ${run.hops.turnRtts} round trips would take ${ms(run.hops.turnRtts * model.rttMs)} ms`
        : ""
    }.`,
    "",
    table(
      ["step", "kind", "median ms", "mean ms", "share"],
      steps.map((s) => [s.name, isHop(s.name) ? "**hop**" : "runner", ms(s.medianMs), ms(s.meanMs), pct(s.share)]),
    ),
  ].join("\n");
}

function profileSection(run: ConclaveRun): string {
  const profile = run.profile;
  if (!profile) return "";
  const runner = profile.summaries.find((s) => s.process === "runner");
  const level = profile.level;
  const others = profile.summaries.filter((s) => s !== runner);
  return [
    `## Profile (c=${profile.sessions}, ${round(level.elapsedMs / 1000, 1)} s, ${level.turns} turns at ${level.turnsPerSec} turns/s while profiling)`,
    "",
    `V8's sampling profiler (200 µs), started and stopped in each process over IPC by the preloaded bench hooks (bench/processHooks.mjs), so the profile covers exactly this window. The .cpuprofile files are in \`${profile.directory}\` (open them in Chrome DevTools). Summarised by bench/profile.ts.`,
    "",
    table(
      ["process", "busy ms", "GC ms", "idle ms", "busy share of wall", "CPU ms per turn"],
      profile.summaries.map((s) => {
        const cpu = level.cpu.find((c) => c.process === s.process);
        return [
          s.process,
          ms(s.busyMs),
          ms(s.gcMs),
          ms(s.idleMs),
          pct(s.wallMs > 0 ? s.busyMs / s.wallMs : 0),
          ms(cpu?.perTurnMs),
        ];
      }),
    ),
    "",
    ...(runner
      ? [
          "### Runner: self time by function",
          "",
          profileTable(runner, "topSelf", 15),
          "",
          "### Runner: self time by origin",
          "",
          profileTable(runner, "byOrigin", 10),
          "",
          "### Runner: inclusive time of notable functions",
          "",
          profileTable(runner, "topInclusive", 15),
        ]
      : []),
    "",
    "### Workers: self time by origin (top 5)",
    "",
    ...others.flatMap((s) => [`**${s.process}**`, "", profileTable(s, "byOrigin", 5), ""]),
  ].join("\n");
}

function memoryRetrievalSection(run: MemoryRetrievalRun | undefined): string {
  if (!run) return "## Memory retrieval at 10 000 nodes\n\nNot in this run (a run made before the scenario existed).";
  const met = run.latency.p95 <= run.goalMs;
  return [
    `## Memory retrieval at ${run.nodes.toLocaleString("en")} nodes`,
    "",
    `What a turn's context stage asks the memory service before its agents run (\`SessionMemory.retrieve\`: the session's facts and open threads ranked for the message within the token budget, three episodes ranked for it, the procedures), with ${run.nodes.toLocaleString("en")} nodes in the session's graph (72% facts, 8% open threads, 20% episodes, a few procedures) on the default NATS KV store, ${run.calls} calls.`,
    "",
    table(["p50 ms", "p95 ms", "p99 ms", "mean ms"], [latencyCells(run.latency)]),
    "",
    `Goal: ≤ ${run.goalMs} ms p95 — ${met ? "met" : `missed (${ms(run.latency.p95)} ms)`}.`,
  ].join("\n");
}

function latencyHidingSection(run: LatencyHidingRun | undefined): string {
  if (!run) return "## Latency hiding (simulated model)\n\nNot in this run (a run made before the scenario existed).";
  const rows = run.levels.map((level) => [
    level.sessions,
    round(level.turnsPerSec, 1),
    ms(level.latency.p50),
    ms(level.latency.p95),
    ms(level.latency.p99),
    level.turns,
    level.failed,
    round(level.modelCallsPerSec, 0),
  ]);
  const first = run.levels[0];
  // The best level among those whose turns mostly completed: a level of timed-out turns says nothing about hiding.
  const healthy = run.levels.filter((level) => level.failed < level.turns / 2);
  const best = (healthy.length > 0 ? healthy : run.levels).reduce((a, b) => (b.turnsPerSec > a.turnsPerSec ? b : a));
  return [
    `## Latency hiding (simulated ${run.modelLatencyMs} ms model)`,
    "",
    `The full turn in LLM mode: workers call a local OpenAI-compatible server (the test suite's, \`test/helpers/openaiServer.ts\`) that answers every call — structured outputs and the streamed voice — after ${run.modelLatencyMs} ms. One turn makes ${run.modelCallsPerTurn} model calls; alone, it took ${ms(run.loneTurnMs)} ms (its sequential model calls are its floor). Closed loop, each session sending its turns back to back.`,
    "",
    table(["sessions", "turns/s", "p50 ms", "p95 ms", "p99 ms", "turns", "not Complete", "model calls/s"], rows),
    "",
    first
      ? [
          `One session alone manages ${round(1000 / run.loneTurnMs, 1)} turns/s (one turn at a time, each waiting on its sequential model calls). With ${best.sessions} sessions the deployment completes ${round(best.turnsPerSec, 1)} turns/s, ${round(best.turnsPerSec / (1000 / run.loneTurnMs), 1)}x that: while one turn waits on the model, the runner and the workers serve the others.`,
          `The limit is then CPU, not the model's latency: every model call costs the worker the \`openai\` client's request and validation and the test server its reply, on the same two cores as the runner, the other workers, nats-server, and the bench's own client and model server. Past that point more sessions only queue: at ${run.levels.at(-1)?.sessions} sessions ${run.levels.at(-1)?.failed} of ${run.levels.at(-1)?.turns} turns missed a stage deadline (\`not Complete\`: they end \`PartialSuccess\`), and some model calls failed to connect under that load.`,
        ].join(" ")
      : "",
  ].join("\n");
}

export function renderReport(results: BenchResults): string {
  const run = results.conclave[0]!;
  const inProcess = results.inProcess.find((s) => s.scenario === run.scenario)?.pipelines ?? [];
  return `${[
    "# Benchmarks",
    "",
    `Generated by \`${results.command}\` (bench/run.ts); every number below is from one run, but for the scaling sections, run apart (\`--cluster\`, \`--scale\`), and the readings written by hand, which name the run they read. Regenerate rather than edit; a run carries the readings by hand over (\`<!-- by hand -->\`). Its main figures are in [benchmarks-summary.json](benchmarks-summary.json); every result of the run is written to \`docs/benchmarks.json\` (not committed).`,
    "",
    targetsSection(results.targets),
    "",
    machineSection(results.environment, results),
    "",
    setupSection(
      run,
      results.plan,
      inProcess,
      results.inProcess.find((s) => s.scenario === run.scenario)?.parity,
      results.postgresSaver,
    ),
    "",
    latencySection(run, inProcess),
    "",
    throughputSection(run, inProcess),
    "",
    cpuSection(run, inProcess),
    "",
    renderTracingCost(results.tracing),
    "",
    memorySection(run, results.benchPeakRssKb),
    "",
    floorSection(run, results.floorModel),
    "",
    breakdownSection(run, results.floorModel),
    "",
    profileSection(run),
    "",
    "## Reading the numbers",
    "",
    ...readingOfTheNumbers(results).map((line) => `- ${line}`),
    "",
    latencyHidingSection(results.latencyHiding),
    "",
    memoryRetrievalSection(results.memoryRetrieval),
    "",
    renderBusyDay(results.busyDay, results.plan),
    "",
    renderUnderLoad(results.underLoad, results.plan.underLoad),
    "",
    "## Method",
    "",
    "- Percentiles are nearest-rank over every measured turn. Throughput is completed turns ÷ wall time of the level (from its first submit to its last completion).",
    "- Turns that end other than `Complete` are counted in `not Complete`; none is expected with the offline model.",
    "- CPU per process comes from /proc; the profile from V8's sampling profiler in-process; memory per idle session from forced full GCs in the runner (`--expose-gc` set by the preloaded hooks).",
    "- The bench exits non-zero only when it cannot run, never because of a number.",
    "",
  ].join("\n")}`;
}
