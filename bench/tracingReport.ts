import { esc, ms, table } from "./markdown.ts";
import { round } from "./stats.ts";
import { type TracingCostRun, tracingOffShare } from "./tracingCost.ts";

/** The report's "Tracing cost" section (docs/BENCHMARKS.md), from the tracing phase's results. */
export function renderTracingCost(run: TracingCostRun | { error: string } | undefined): string {
  const title = "## Tracing cost";
  if (!run) return `${title}\n\nNot in this run (a run made before the bench measured it).`;
  if ("error" in run) return `${title}\n\nThe tracing phase could not run: ${esc(run.error)}.`;
  const side = (s: TracingCostRun["off"]) => [
    ms(s.latency.p50),
    ms(s.latency.p95),
    ms(s.latency.p99),
    ms(s.latency.mean),
    s.turns,
    s.failed,
    ms(s.cpuPerTurnMs),
  ];
  const added = (run.p50Ratio - 1) * 100;
  const services = Object.entries(run.spansByService)
    .sort((a, b) => b[1] - a[1])
    .map(([service, spans]) => `${esc(service)} ${spans}`)
    .join(", ");
  const traced =
    run.spansReceived > 0
      ? `Tracing on adds **${round(added, 1)}%** to the p50 (on ÷ off = ${round(run.p50Ratio, 3)}x). The sink received ${run.spansReceived} spans for the ${run.countedTurns} turns of the traced blocks: **${run.spansPerTurn} spans per turn** (by service: ${services || "none"}; ${run.exportRequests} export requests${run.unreadableExports > 0 ? `, ${run.unreadableExports} of them not OTLP JSON and not counted` : ""}).`
      : `**No span reached the sink: the traced deployment did not trace** (its processes did not act on the OTEL variables). The two columns above compare two untraced deployments; they say nothing about what tracing costs.`;
  return [
    title,
    "",
    `Two deployments of the same code at once, each with its own nats-server, runner and three workers: one started with ${Object.entries(
      run.env,
    )
      .map(([name, value]) => `\`${name}=${value}\``)
      .join(
        ", ",
      )}, exporting to an OTLP/HTTP receiver the bench runs (node:http, \`POST /v1/traces\` answered 200 \`{}\`, spans counted by service); the other without any tracing variable. Both had the main deployment's warm-up and the c=1 level's unmeasured time, then ran c=${run.sessions} turns in alternating blocks of ${round(run.blockMs / 1000, 1)} s (${run.order.join(", ")}), so drift of the machine falls on both sides alike; spans are counted over those blocks only. The batch span processor exports every 500 ms with a queue large enough that no span is dropped. Other work on the machine: at most ${run.backgroundCores} cores during a block.`,
    "",
    table(
      ["c=1", "p50 ms", "p95 ms", "p99 ms", "mean ms", "turns", "not Complete", "CPU ms/turn (deployment)"],
      [
        ["tracing off", ...side(run.off)],
        ["tracing on", ...side(run.on)],
      ],
    ),
    "",
    traced,
    "",
    tracingOffSection(run),
  ].join("\n");
}

/** Tracing off, timed in process: the instrumentation is in the code either way, so two deployments cannot show it. */
function tracingOffSection(run: TracingCostRun): string {
  const micro = run.offMicro;
  const heading = "### Tracing off";
  if ("error" in micro) return `${heading}\n\nNot timed: ${esc(micro.error)}.`;
  const share = tracingOffShare(run);
  return [
    heading,
    "",
    `The instrumentation is in the code whether tracing is on or off, so two deployments of the same code cannot show what it costs when off. Instead the bench times, in its own process (no tracer provider registered: tracing off), each entry point a traced hop goes through, ${micro.calls.toLocaleString("en")} calls at a time, median of ${micro.repetitions} runs:`,
    "",
    table(
      ["entry point (src/telemetry/)", "what for", "ns per call"],
      micro.entryPoints.map((entry) => [`\`${entry.name}\``, entry.role, round(entry.nsPerCall, 1)]),
    ),
    "",
    share
      ? `Counting every entry point for every span (an upper bound: with tracing off the guarded sites stop at \`tracingActive()\`), that is ${round(micro.nsPerSpan, 1)} ns per span × ${run.spansPerTurn} spans per traced turn = **${share.usPerTurn} µs per turn**, ${round(share.shareOfP50 * 100, 3)}% of the untraced p50 (${ms(run.off.latency.p50)} ms).`
      : `${round(micro.nsPerSpan, 1)} ns per span with every entry point counted; not scaled to a turn, since the traced deployment sent no span to count.`,
  ].join("\n");
}
