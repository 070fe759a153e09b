/**
 * The "join" phase of `npm run bench -- --scale` (issue 36, membership under load): on a three-node
 * cluster, unsliced, 1 runner × 2 workers carry a closed loop of sessions; half-way through, 2 more
 * runners start while the load goes on, and the load keeps going until as many turns again have
 * completed after they are ready. Each turn's start and latency are kept; afterwards each session's
 * log is read back to find turns run twice (more than one TURN_COMPLETED, or a TURN_RESUMED: a
 * clean join hands sessions over between turns, so a turn taken over was run again).
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { readEvents } from "../src/eventlog/reader.ts";
import { conclaveTurn } from "./conclave.ts";
import { closedLoop } from "./load.ts";
import type { BenchPlan } from "./plan.ts";
import { progress } from "./progress.ts";
import { type ScalePlan, UNSLICED_EVENT_STREAMS } from "./scalePlan.ts";
import { withDeployment } from "./scaleSlices.ts";
import { round, summarize } from "./stats.ts";

/** How much longer than the p99 before the join a turn across it may take (issue 36). */
export const JOIN_WAIT_BUDGET_MS = 2000;

/** What the join phase measured. */
export interface JoinResult {
  natsNodes: number;
  eventStreams: number;
  sessions: number;
  /** Runners before the join, and runners added. */
  runners: number;
  added: number;
  /** Turns completed before the join began. */
  turnsBefore: number;
  /** Turns in flight when the join began, or started after it. */
  turnsAcross: number;
  /** From the join's start until the added runners were ready, in ms. */
  joinMs: number;
  /** p99 latency of the turns completed before the join began, in ms. */
  p99BeforeMs: number;
  /** The longest turn in flight at, or started after, the join's start, in ms. */
  longestAcrossMs: number;
  /** Of those, how many took longer than p99 before + {@link JOIN_WAIT_BUDGET_MS}. */
  overBudget: number;
  /** Turns that threw or did not end Complete. */
  failed: number;
  /** Turns whose log holds more than one TURN_COMPLETED or a TURN_RESUMED. */
  runTwice: number;
  /** Each measured turn in start order: its start from the join's start (negative before it) and its latency, in ms. */
  turns: { startedMs: number; latencyMs: number; ok: boolean }[];
}

/** One turn as the join phase saw it: when it started and ended (performance.now()), and how. */
interface JoinSample {
  startedAt: number;
  endedAt: number;
  ok: boolean;
}

/** Turns of each log with more than one TURN_COMPLETED, or any TURN_RESUMED. */
async function turnsRunTwice(nc: NatsConnection, sessionIds: string[]): Promise<number> {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  let twice = 0;
  for (const sessionId of sessionIds) {
    const perTurn = new Map<number, { completed: number; resumed: number }>();
    for (const event of await readEvents(js, jsm, sessionId)) {
      const turn = perTurn.get(event.turn_id) ?? { completed: 0, resumed: 0 };
      if (event.kind === "TURN_COMPLETED") turn.completed++;
      if (event.kind === "TURN_RESUMED") turn.resumed++;
      perTurn.set(event.turn_id, turn);
    }
    for (const turn of perTurn.values()) if (turn.completed > 1 || turn.resumed > 0) twice++;
  }
  return twice;
}

/** The join phase (see the module's comment), with as many sessions and turns as the unsliced 1-runner point. */
export async function runJoin(bench: BenchPlan, plan: ScalePlan, tag: string): Promise<JoinResult> {
  const shape = { natsNodes: 3, eventStreams: UNSLICED_EVENT_STREAMS };
  const sessions = plan.sessionsPerSlice;
  const half = Math.max(1, Math.ceil((sessions * Math.ceil(plan.turnsPerSlice / plan.sessionsPerSlice)) / 2));
  const added = 2;
  return withDeployment(shape, null, plan, false, async (machines, nc) => {
    await machines.add("j1", 1, 2, null);
    const sessionIds = Array.from({ length: sessions }, (_, index) => `${tag}-join-${index}`);
    const text = (index: number) => bench.texts[index % bench.texts.length]!;
    await closedLoop({
      sessions,
      turnsPerSession: 1,
      runTurn: (session) => conclaveTurn(nc, sessionIds[session]!, text(0)),
    });

    const samples: JoinSample[] = [];
    let joinAt = Number.POSITIVE_INFINITY;
    let readyAt = Number.POSITIVE_INFINITY;
    let joining: Promise<void> | null = null;
    let stop = false;
    let joinError: unknown = null;
    const join = async () => {
      joinAt = performance.now();
      progress(`  join: ${samples.length} turns done, adding ${added} runners under load`);
      try {
        await machines.add("j2", added, 0, null);
      } catch (error) {
        // A join that fails ends the phase with its error rather than leaving the loops to run on.
        joinError = error;
        stop = true;
        return;
      }
      readyAt = performance.now();
      progress(`  join: ${added} runners ready after ${Math.round(readyAt - joinAt)} ms`);
    };
    let afterReady = 0;
    let thrown = 0;
    const completed = (sample: JoinSample) => {
      samples.push(sample);
      if (!joining && samples.length >= half) joining = join();
      if (sample.endedAt >= readyAt && ++afterReady >= half) stop = true;
    };
    const loop = async (session: number) => {
      for (let index = 1; !stop; index++) {
        const startedAt = performance.now();
        let ok = false;
        try {
          ok = (await conclaveTurn(nc, sessionIds[session]!, text(index))).ok;
        } catch (error) {
          if (++thrown <= 3) progress(`  join: turn failed: ${error instanceof Error ? error.message : error}`);
        }
        completed({ startedAt, endedAt: performance.now(), ok });
      }
    };
    await Promise.all(sessionIds.map((_, session) => loop(session)));
    await joining;
    if (joinError) throw joinError;

    const before = samples.filter((s) => s.endedAt < joinAt && s.ok);
    const across = samples.filter((s) => s.endedAt >= joinAt);
    const latency = (s: JoinSample) => s.endedAt - s.startedAt;
    const p99BeforeMs = summarize(before.map(latency)).p99;
    const longestAcrossMs = Math.max(0, ...across.map(latency));
    const result: JoinResult = {
      ...shape,
      sessions,
      runners: 1,
      added,
      turnsBefore: before.length,
      turnsAcross: across.length,
      joinMs: round(readyAt - joinAt, 0),
      p99BeforeMs: round(p99BeforeMs, 1),
      longestAcrossMs: round(longestAcrossMs, 1),
      overBudget: across.filter((s) => latency(s) > p99BeforeMs + JOIN_WAIT_BUDGET_MS).length,
      failed: samples.filter((s) => !s.ok).length,
      runTwice: await turnsRunTwice(nc, sessionIds),
      turns: [...samples]
        .sort((a, b) => a.startedAt - b.startedAt)
        .map((s) => ({ startedMs: round(s.startedAt - joinAt, 1), latencyMs: round(latency(s), 1), ok: s.ok })),
    };
    progress(
      `  join: p99 before ${Math.round(result.p99BeforeMs)} ms, longest across ${Math.round(result.longestAcrossMs)} ms, ${result.overBudget} over p99 + ${JOIN_WAIT_BUDGET_MS} ms, ${result.failed} failed, ${result.runTwice} run twice`,
    );
    return result;
  });
}
