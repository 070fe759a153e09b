import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../src/nats/server.ts";
import type { ProfileSummary } from "./profile.ts";
import type { BenchResults } from "./report.ts";
import { round } from "./stats.ts";

/**
 * The report's reading of its own numbers: where the time goes against the
 * targets, then what would move it, each suggestion only when this run's
 * profile or trace shows the cost, ranked by the CPU it would save per turn.
 */

const f = (value: number, digits = 2) => round(value, digits).toString();

/** Whether the runtime's connections already skip nats.js's per-request stack capture. */
const asyncTracesOff = (): boolean => {
  try {
    return /noAsyncTraces:\s*true/.test(readFileSync(join(REPO_ROOT, "src", "bus", "connection.ts"), "utf8"));
  } catch {
    return false;
  }
};

interface Suggestion {
  /** Estimated runner CPU saved per turn (ms), for ranking. */
  gainMs: number;
  text: string;
}

const selfShare = (summary: ProfileSummary | undefined, pattern: RegExp) =>
  (summary?.topSelf ?? []).filter((e) => pattern.test(e.name)).reduce((sum, e) => sum + e.share, 0);
const inclusiveShare = (summary: ProfileSummary | undefined, pattern: RegExp) =>
  Math.max(0, ...(summary?.topInclusive ?? []).filter((e) => pattern.test(e.name)).map((e) => e.share));
const originShare = (summary: ProfileSummary | undefined, origin: string) =>
  (summary?.byOrigin ?? []).find((e) => e.name === origin)?.share ?? 0;

export function suggestions(results: BenchResults): { reading: string[]; advice: string[] } {
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

  // Where the time goes, against each target.
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
          ? `already ${f(floor.clientFloorMs / needed)}x above it: no runtime making ${floor.clientRtts} sequential NATS round trips plus durable events can meet this target against an in-process pipeline on the offline model; it needs fewer sequential hops (e.g. co-locating the scheduler, council, voice and critics with the runner, or one request per stage group), or a comparison where the model's latency dominates (item 3).`
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

  // What would move it, from this run's profile and trace.
  const runner = run.profile?.summaries.find((s) => s.process === "runner");
  const profiledRunnerCpu = run.profile?.level.cpu.find((c) => c.process === "runner")?.perTurnMs ?? runnerCpu(top);
  const gain = (share: number) => share * profiledRunnerCpu;
  const advice: Suggestion[] = [];
  const errors = selfShare(runner, /^(RequestError|TimeoutError) @nats-io\/nats-core/);
  if (errors > 0.02) {
    const text = asyncTracesOff()
      ? `**@nats-io/nats-core still builds a \`RequestError\` (with a stack trace) after every successful request**: \`connectBus\` already passes \`noAsyncTraces: true\`, but \`RequestOne.resolver()\` calls \`cancel()\`, which creates \`new RequestError("cancelled")\` to reject an already-settled promise (node_modules/@nats-io/nats-core/lib/request.js). That is ${f(errors * 100, 1)}% of the runner's busy time here (≈ ${f(gain(errors))} ms CPU per turn), mostly from the ${run.hops.eventAppends} event-log appends per turn, each a request. Worth reporting upstream; the event-log change below avoids it for the appends.`
      : `**\`src/bus/connection.ts\`, \`connectBus\`: pass \`noAsyncTraces: true\` to \`connect()\`.** nats.js otherwise builds a \`RequestError\` and a \`TimeoutError\` (each capturing a stack trace) for every request, to give async stack traces to errors that almost never happen — and every event-log append (\`js.publish\`, ${run.hops.eventAppends} per turn) is a request, besides the turn's ${run.hops.turnRtts} round trips. Those two constructors are ${f(errors * 100, 1)}% of the runner's busy time here (≈ ${f(gain(errors))} ms CPU per turn). Even with the option, \`RequestOne.cancel()\` in @nats-io/nats-core builds a \`RequestError("cancelled")\` after every successful request (worth reporting upstream).`;
    advice.push({ gainMs: gain(errors), text });
  }
  const append = inclusiveShare(runner, / src\/eventlog\/writer\.ts:/);
  // The error objects are built for every request; the appends are most of the runner's requests.
  const requestsPerTurn =
    run.hops.eventAppends +
    run.hops.submit.rtts +
    run.hops.phases.flatMap((p) => p.groups).reduce((sum, g) => sum + g.requests + g.nestedRtts, 0);
  const appendOwn = Math.max(0, append - (errors * run.hops.eventAppends) / Math.max(1, requestsPerTurn));
  if (append > 0.05) {
    advice.push({
      gainMs: gain(appendOwn / 2),
      text: `**\`src/eventlog/writer.ts\`, the event log's publish path: ${f(append * 100, 1)}% of the runner's busy time (inclusive).** Each of the ${run.hops.eventAppends} events per turn is a full JetStream request: a mux-inbox registration, a timeout timer, a promise, a msgID header and a separate ack. A lighter path keeps the log's guarantees: publish with \`nc.publish(subject, data, { reply: <one writer inbox>, headers })\` and match the PubAcks on one subscription by msgID (or keep \`js.publish\` but skip per-call timers), and encode each event once. Without the error objects (above) the appends are still ≈ ${f(appendOwn * 100, 1)}% of the runner's busy time; the estimate assumes half of that is recoverable.`,
    });
  }
  const domException = selfShare(runner, /^DOMException /);
  if (domException > 0.005) {
    advice.push({
      gainMs: gain(domException),
      text: `**\`src/runtime/provideTurn.ts\` / XState's \`fromPromise\`: every stage exit aborts its AbortSignal**, and each abort builds a \`DOMException\` (AbortError) with a stack: ${f(domException * 100, 1)}% of the runner's busy time. Aborting only requests still in flight (the signal is needed for timeouts, not for completed calls) removes it.`,
    });
  }
  const gc = runner ? runner.gcMs / Math.max(1, runner.busyMs) : 0;
  if (gc > 0.08) {
    advice.push({
      gainMs: gain(gc / 3),
      text: `**Allocation: GC is ${f(gc * 100, 1)}% of the runner's busy time.** Per event the runner builds the record, the \`EngineEvent\`, its JSON string and bytes; per hop \`agentContext()\` copies the workspace into each agent request (every agent of a wave gets the same context, encoded once per agent: encode it once per wave). Fewer intermediate objects and one encoding per payload shrink this.`,
    });
  }
  const xstate = originShare(runner, "xstate");
  if (xstate > 0.1) {
    advice.push({
      gainMs: gain(xstate / 4),
      text: `**The turn statechart itself: ${f(xstate * 100, 1)}% of the runner's busy time is XState's own code** (macrosteps, action resolution, the \`after\` timers each stage state arms and cancels). Each recorded event is an action executed inside a microstep; the in-process reference (the same machine without NATS) runs a whole turn in ${f(results.inProcess[0]?.pipelines.find((p) => !p.name.startsWith("LangGraph"))?.levels[0]?.latency.p50 ?? Number.NaN)} ms, so the machine is not the bottleneck on its own, but collapsing the per-wave \`agent.replied\` events into one transition per wave and the stage-level \`after\` deadlines into one turn-level timer would trim it.`,
    });
  }
  const codec = selfShare(runner, /src\/bus\/codec\.ts/) + selfShare(runner, /^(encode|encodeUtf8String) /);
  if (codec > 0.03) {
    advice.push({
      gainMs: gain(codec / 2),
      text: `**JSON encoding: ${f(codec * 100, 1)}% of the runner's busy time in \`src/bus/codec.ts\` and UTF-8 encoding.** Agent requests of one wave carry the same context: encode it once per wave and splice it, and avoid re-encoding events the writer already serialised.`,
    });
  }
  const submit = run.hops.submit;
  if (submit.rtts > 1 && floor) {
    advice.push({
      gainMs: 0,
      text: `**\`src/runtime/runner.ts\`, accepting a turn: the ack waits for ${submit.rtts - 1} sequential JetStream round trips inside the runner** (${submit.nestedLabel}), and ${run.hops.startRtts} more come before TURN_STARTED — ${submit.rtts - 1 + run.hops.startRtts} of the ${floor.clientRtts} round trips in the client's floor, ${f(run.breakdown.client[0]?.medianMs ?? Number.NaN)} ms of the client's median turn. Batching them (one KV transaction-like write: the turn record and the counter in one message, or reserving turn ids in blocks) and making the WAL append the only write before the ack would cut most of them.`,
    });
  }
  if (run.hops.finishRtts > 2) {
    advice.push({
      gainMs: 0,
      text: `**After TURN_COMPLETED the runner makes ${run.hops.finishRtts} more sequential round trips** (${run.hops.phases
        .find((p) => p.phase === "after TURN_COMPLETED")
        ?.groups.map((g) => g.label)
        .join(
          ", ",
        )}). They are off the client's latency path but hold the session (its next turn waits) and cost runner CPU per turn; writing them as one batch, or pipelining them, would free the session sooner.`,
    });
  }
  const workers = run.profile?.summaries.filter((s) => s.process.startsWith("worker")) ?? [];
  const workerXstate = workers.map((w) => originShare(w, "xstate"));
  const workerZod = workers.map((w) => originShare(w, "zod"));
  if (workers.length > 0 && Math.max(...workerXstate, ...workerZod) > 0.1) {
    advice.push({
      gainMs: 0,
      text: `**Workers: \`src/bus/serveActor.ts\` creates, starts and stops an XState actor per request and validates with zod on the way in and out** — XState is up to ${f(Math.max(...workerXstate) * 100, 1)}% and zod up to ${f(Math.max(...workerZod) * 100, 1)}% of a worker's busy time. For the offline rule paths this costs far more than the agent's work; it shows up as hop time (the first reply of a wave waits for the worker to get through the requests before it). Spreading a wave's agents over more worker processes shortens the wave's hop; a plain function endpoint (no actor) for the stateless services (scheduler, council, voice, critics) cuts their per-request cost.`,
    });
  }
  const idle = run.idle;
  const idleLast = idle?.readings.at(-1);
  if (idle && idleLast && idleLast.idleRunnerCores > 0.05) {
    const sessions = idle.existingSessions + idleLast.sessions;
    advice.push({
      gainMs: 0,
      text: `**Idle sessions cost CPU: with ${sessions} idle sessions the runner used ${f(idleLast.idleRunnerCores)} cores while no turn ran** (${f(idle.readings[0]?.idleRunnerCores ?? Number.NaN)} cores with ${idle.existingSessions}). On the wire meanwhile: ${
        idle.idleTraffic.map((t) => `${t.subject} ${t.perSecond}/s`).join(", ") || "nothing"
      }. Per-session timers or lease renewals scale with the number of live sessions, not with the load: renewing in one batch per runner (or one lease per runner rather than per session), and evicting idle session actors after a while, keeps that flat.`,
    });
  }
  advice.sort((a, b) => b.gainMs - a.gainMs);
  return {
    reading: lines,
    advice:
      advice.length > 0
        ? advice.map(
            (s, index) =>
              `${index + 1}. ${s.text}${s.gainMs > 0 ? ` *(estimated ≈ ${f(s.gainMs)} ms of runner CPU per turn)*` : ""}`,
          )
        : ["No single hot spot stands out in this run's profile."],
  };
}
