import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/nats-core";
import type { ConclaveProcess } from "../src/cli/childProcess.ts";
import { LLM_LAYOUT } from "../src/cli/localCluster.ts";
import { submitTurn, watchTurn } from "../src/client/turns.ts";
import type { TurnAck } from "../src/contracts/turn.ts";
import { pause } from "../src/deadline.ts";
import { isConclaveError } from "../src/errors.ts";
import { TurnStatusStore } from "../src/eventlog/turnStatusStore.ts";
import type { BenchCluster } from "./cluster.ts";
import { LeaseLapses } from "./loggedProcess.ts";
import type { BenchPlan } from "./plan.ts";
import { summarizeProfile } from "./profile.ts";
import { progress } from "./progress.ts";
import { SIMULATED_MODEL_MS, startSimulatedModelCluster } from "./simulatedModel.ts";
import { round, type Summary, summarize } from "./stats.ts";
import { kill, repeats, requestKey } from "./takeover.ts";

/** The event after which the runner is killed: wave 0's agents have answered (recorded), wave 1 is next. */
const KILL_AFTER = "WAVE_COMPLETED";
/** The runner is killed once this share of the round's turns has reached KILL_AFTER: most are mid-turn. */
const KILL_AT_SHARE = 0.1;

/** One round of `inFlight` turns submitted at once; in a kill round, a runner killed while they run. */
export interface LoadRound {
  /** Turns submitted and not yet completed when the runner was killed (null: no kill). */
  inFlightAtKill: number | null;
  /** Turns whose log shows TURN_RESUMED after the kill: the killed runner's, taken over. */
  takenOver: number;
  /** Per taken-over turn: kill → TURN_RESUMED and kill → TURN_COMPLETED, as the client sees them. */
  resumedMs: number[];
  completedMs: number[];
  /** Turns that ended other than Complete, or not within the watch's patience. */
  notComplete: number;
  modelCalls: number;
  /** Model requests of the round identical to an earlier one of it (every turn's text is its own). */
  repeatedModelCalls: number;
  /** The repeats by what was asked: the structured output's schema name (an agent, the council, a critic) or `stream` (the voice). */
  repeatedBy: Record<string, number>;
}

export interface LoadTakeoverRun {
  modelLatencyMs: number;
  killAfter: string;
  inFlight: number;
  /** The processes up at each kill: two runners, and every worker of the LLM layout twice. */
  layout: string[];
  /** The same load with no kill: its repeats show what the measure counts when nothing dies (0 expected). */
  control: LoadRound;
  kills: LoadRound[];
  resumed: Summary | null;
  completed: Summary | null;
  repeatedModelCalls: number;
  /** The surviving runners' "liveness lease lapsed" lines over the phase. */
  lapses: number;
}

/** Repeated requests by the name of what was asked (the first element of their requestKey). */
function repeatsByName(bodies: Parameters<typeof repeats>[0]): Record<string, number> {
  const seen = new Map<string, number>();
  for (const body of bodies) seen.set(requestKey(body), (seen.get(requestKey(body)) ?? 0) + 1);
  const by: Record<string, number> = {};
  for (const [key, n] of seen) {
    const name = String((JSON.parse(key) as unknown[])[0] || "unnamed");
    if (n > 1) by[name] = (by[name] ?? 0) + n - 1;
  }
  return by;
}

/** The runner process that owns a turn now (its turn status names `host:pid`), if it is still up. */
async function ownerOf(
  cluster: BenchCluster,
  statuses: TurnStatusStore,
  ack: TurnAck,
): Promise<ConclaveProcess | null> {
  const owner = (await statuses.get(ack.session_id, ack.turn_id))?.runner;
  return (
    cluster.processes.find(
      (p) => p.name.startsWith("runner") && p.child.exitCode === null && owner?.endsWith(`:${p.child.pid}`),
    ) ?? null
  );
}

/** Submits, retrying a `busy` answer after its hint (the load is meant to be in flight, not refused). */
async function submit(nc: NatsConnection, session: string, text: string): Promise<TurnAck> {
  for (;;) {
    try {
      return await submitTurn(nc, session, { text } as Parameters<typeof submitTurn>[2], 30_000);
    } catch (error) {
      if (!isConclaveError(error, "busy")) throw error;
      await pause((error as { retryAfterMs?: number }).retryAfterMs ?? 500);
    }
  }
}

/**
 * `inFlight` sessions submit one turn each at once; with `killing`, once a tenth of them has
 * stored KILL_AFTER, the runner owning the turn that crossed that mark is SIGKILLed.
 */
async function loadRound(
  nc: NatsConnection,
  cluster: BenchCluster,
  statuses: TurnStatusStore,
  requests: unknown[],
  options: { prefix: string; inFlight: number; texts: string[]; killing: boolean },
): Promise<LoadRound> {
  const from = requests.length;
  let killedAt: number | null = null;
  let killing: Promise<void> | null = null;
  /** The surviving runners, profiled from the kill to the round's end (BENCH_PROFILE_TAKEOVER=1). */
  let profiled: ConclaveProcess[] = [];
  let reached = 0;
  let done = 0;
  let inFlightAtKill: number | null = null;
  const resumedMs: number[] = [];
  const completedMs: number[] = [];
  let notComplete = 0;
  const turn = async (i: number) => {
    const session = `${options.prefix}-${i}`;
    // Every turn's text its own, so that two turns never send the model identical requests.
    const text = `${options.texts[i % options.texts.length]} (${options.prefix}, message ${i})`;
    let resumedAt: number | null = null;
    try {
      const ack = await submit(nc, session, text);
      const completed = await watchTurn(
        nc,
        ack,
        (event) => {
          if (event.kind === "TURN_RESUMED" && killedAt !== null && resumedAt === null) resumedAt = performance.now();
          if (event.kind !== KILL_AFTER || !options.killing || killing) return;
          if (++reached < Math.ceil(options.inFlight * KILL_AT_SHARE)) return;
          killing = (async () => {
            const victim = await ownerOf(cluster, statuses, ack);
            if (!victim) return;
            inFlightAtKill = options.inFlight - done;
            killedAt = performance.now();
            await kill(victim);
            if (PROFILE_TAKEOVER) profiled = await startProfiles(cluster, victim);
          })();
        },
        180_000,
      );
      if (completed.payload.outcome.status !== "Complete") notComplete++;
      if (resumedAt !== null && killedAt !== null) {
        resumedMs.push(round(resumedAt - killedAt, 1));
        completedMs.push(round(performance.now() - killedAt, 1));
      }
    } catch {
      notComplete++;
    } finally {
      done++;
    }
  };
  await Promise.all(Array.from({ length: options.inFlight }, (_, i) => turn(i)));
  await killing;
  if (profiled.length > 0) await reportProfiles(cluster, profiled, options.prefix);
  const bodies = requests.slice(from) as Parameters<typeof repeats>[0];
  return {
    inFlightAtKill,
    takenOver: resumedMs.length,
    resumedMs,
    completedMs,
    notComplete,
    modelCalls: bodies.length,
    repeatedModelCalls: repeats(bodies),
    repeatedBy: repeatsByName(bodies),
  };
}

/** `BENCH_PROFILE_TAKEOVER=1`: the surviving runners are CPU-profiled from each kill to the end of its round. */
const PROFILE_TAKEOVER = process.env.BENCH_PROFILE_TAKEOVER === "1";

/** Starts a CPU profile on every runner still up but the victim. */
async function startProfiles(cluster: BenchCluster, victim: ConclaveProcess): Promise<ConclaveProcess[]> {
  const survivors = cluster.processes.filter((p) => p.name.startsWith("runner") && p !== victim && p.child.connected);
  await Promise.all(survivors.map((p) => cluster.control(p, { bench: "profile-start", intervalUs: 500 })));
  return survivors;
}

/** Stops the profiles and says how busy each survivor was during the takeover, and on what. */
async function reportProfiles(cluster: BenchCluster, profiled: ConclaveProcess[], prefix: string): Promise<void> {
  for (const p of profiled) {
    const path = join(tmpdir(), `conclave-takeover-${prefix}-${p.child.pid}.cpuprofile`);
    await cluster.control(p, { bench: "profile-stop", path });
    const summary = summarizeProfile(path, p.name, 8);
    const share = (ms: number) => `${Math.round((ms / Math.max(summary.wallMs, 1)) * 100)}%`;
    progress(
      `under load, takeover profile of ${p.name}: ${round(summary.wallMs, 0)} ms from the kill, busy ${share(summary.busyMs)} (GC ${share(summary.gcMs)}), idle ${share(summary.idleMs)}; by origin: ${summary.byOrigin
        .slice(0, 6)
        .map((entry) => `${entry.name} ${share(entry.ms)}`)
        .join(", ")}; top self: ${summary.topSelf
        .slice(0, 5)
        .map((entry) => `${entry.name} ${share(entry.ms)}`)
        .join(", ")} (${path})`,
    );
  }
}

/**
 * Takeover under load: two runners and every worker of the LLM layout twice
 * (two workers per step), the simulated model; rounds of `inFlight` turns
 * at once, a runner SIGKILLed mid-round, a new one started after each round.
 */
export async function runLoadTakeover(plan: BenchPlan, tag: string): Promise<LoadTakeoverRun> {
  const p = plan.underLoad;
  const lapses = new LeaseLapses();
  const { model, cluster, nc } = await startSimulatedModelCluster("bench-load-takeover", {
    onLogLine: lapses.listener,
  });
  const observer = await cluster.connectInstrument("bench-load-takeover-status");
  let spawned = 1;
  try {
    for (const { name, args } of LLM_LAYOUT.filter((process) => process.args[0] === "worker"))
      await cluster.spawn(`${name}#2`, args);
    await cluster.spawn(`runner-${++spawned}`, ["runner"]);
    const layout = cluster.processes.map((process) => process.name);
    const statuses = await TurnStatusStore.open(observer);
    const round_ = (prefix: string, killing: boolean) =>
      loadRound(nc, cluster, statuses, model.requests, { prefix, inFlight: p.inFlight, texts: plan.texts, killing });
    progress(`under load, takeover: ${layout.join(", ")}; warming up`);
    await round_(`${tag}-lt-warm`, false);
    const control = await round_(`${tag}-lt-control`, false);
    progress(
      `under load, takeover: ${p.inFlight} turns with no kill: ${control.modelCalls} model calls, ${control.repeatedModelCalls} repeated (${JSON.stringify(control.repeatedBy)}), ${control.notComplete} not Complete`,
    );
    const kills: LoadRound[] = [];
    for (let attempt = 0; kills.length < p.kills && attempt < p.kills * 2; attempt++) {
      const result = await round_(`${tag}-lt-kill-${attempt}`, true);
      if (result.inFlightAtKill === null) {
        progress("under load, takeover: no runner could be killed in that round; again");
        continue;
      }
      kills.push(result);
      const resumed = result.resumedMs.length > 0 ? summarize(result.resumedMs) : null;
      progress(
        `under load, takeover ${kills.length}/${p.kills}: ${result.inFlightAtKill} in flight at the kill, ${result.takenOver} taken over (kill → TURN_RESUMED p50 ${resumed?.p50 ?? "–"} ms, p95 ${resumed?.p95 ?? "–"} ms); ${result.modelCalls} model calls, ${result.repeatedModelCalls} repeated (${JSON.stringify(result.repeatedBy)}); ${result.notComplete} not Complete`,
      );
      // Two runners again for the next kill (started now, so its start-up does not overlap a takeover).
      await cluster.spawn(`runner-${++spawned}`, ["runner"]);
    }
    const all = (pick: (r: LoadRound) => number[]) => kills.flatMap(pick);
    return {
      modelLatencyMs: SIMULATED_MODEL_MS,
      killAfter: KILL_AFTER,
      inFlight: p.inFlight,
      layout,
      control,
      kills,
      resumed: all((r) => r.resumedMs).length > 0 ? summarize(all((r) => r.resumedMs)) : null,
      completed: all((r) => r.completedMs).length > 0 ? summarize(all((r) => r.completedMs)) : null,
      repeatedModelCalls: kills.reduce((n, r) => n + r.repeatedModelCalls, 0),
      lapses: lapses.count,
    };
  } finally {
    await observer.close();
    await nc.close();
    await cluster.stop();
    await model.stop();
  }
}
