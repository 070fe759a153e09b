import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { streams, subjects } from "../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../src/client/client.ts";
import type { TurnAck } from "../src/contracts/turn.ts";
import { pause } from "../src/deadline.ts";
import { isConclaveError, messageOf } from "../src/errors.ts";
import { TurnStatusStore } from "../src/eventlog/turnStatusStore.ts";
import { LeaseLapses } from "./loggedProcess.ts";
import type { BenchPlan } from "./plan.ts";
import { progress, ticker } from "./progress.ts";
import { SIMULATED_MODEL_MS, startSimulatedModelCluster } from "./simulatedModel.ts";
import { round, type Summary, summarize } from "./stats.ts";

/** How one submitter's turn ended, within its patience. */
type Outcome =
  | { kind: "completed"; latencyMs: number; busyAnswers: number }
  | { kind: "busy"; busyAnswers: number }
  /** Ended other than Complete (PartialSuccess, Failed, Cancelled) or refused other than `busy`. */
  | { kind: "failed"; status: string; busyAnswers: number; ack?: TurnAck; error?: string; warnings?: string[] }
  /** Accepted, but not completed within the patience. */
  | { kind: "timedOut"; busyAnswers: number; ack: TurnAck };

/** One burst: every session submits one turn at once. */
export interface BurstRun {
  sessions: number;
  completed: number;
  refusedBusy: number;
  failed: number;
  /** Accepted but neither completed nor refused within the patience. */
  timedOut: number;
  /** Poison turns: dead letters under conclave.dlq.poison, or statuses failed with a poison reason (the larger). */
  poisoned: number;
  poisonLetters: number;
  /** The runner's "liveness lease lapsed" log lines during the burst. */
  lapses: number;
  /** Workers' model calls that could not reach the bench's model server ("Connection error" in their log). */
  modelConnectionErrors: number;
  /** `busy` answers, each retried after its hint while the patience allowed. */
  busyAnswers: number;
  /** How the turns that did not complete ended: TURN_COMPLETED's status, `refused` (a submission error), `not completed in time`. */
  statuses: Record<string, number>;
  /** The warnings of the turns that ended PartialSuccess, as `stage: code`, and how many turns had each. */
  warnings: Record<string, number>;
  /** The stored turn status (conclave_turns) of those that were accepted: done, failed, inflight… */
  turnStatuses: Record<string, number>;
  /** From the first submission to TURN_COMPLETED, of the completed turns. */
  latency: Summary;
  /** From the burst's start until its last submitter settled. */
  elapsedMs: number;
  /** A few of the errors seen, for the report. */
  errors: string[];
}

const DEFAULT_RETRY_MS = 500;

/**
 * One submitter with a patience, through the public client as `conclave send`
 * does it: a `busy` answer is honoured by retrying after its `retry_after_ms`,
 * as long as that still falls within the patience; otherwise it is refused.
 */
async function patientTurn(
  client: ConclaveClient,
  session: string,
  text: string,
  patienceMs: number,
): Promise<Outcome> {
  const started = performance.now();
  const deadline = started + patienceMs;
  let busyAnswers = 0;
  for (;;) {
    const remaining = Math.max(1, deadline - performance.now());
    const turn = client.submit(session, text, { timeoutMs: remaining, submitPatienceMs: remaining });
    let ack: TurnAck;
    try {
      ack = await turn.ack;
    } catch (error) {
      if (!isConclaveError(error, "busy"))
        return { kind: "failed", status: "refused", busyAnswers, error: messageOf(error) };
      busyAnswers++;
      const hint = (error as { retryAfterMs?: number }).retryAfterMs ?? DEFAULT_RETRY_MS;
      if (performance.now() + hint >= deadline) return { kind: "busy", busyAnswers };
      await pause(hint);
      continue;
    }
    try {
      const result = await turn.result;
      return result.outcome.status === "Complete"
        ? { kind: "completed", latencyMs: performance.now() - started, busyAnswers }
        : {
            kind: "failed",
            status: result.outcome.status,
            busyAnswers,
            ack,
            ...("warnings" in result.outcome
              ? { warnings: result.outcome.warnings.map((w) => `${w.stage}: ${w.code}`) }
              : {}),
          };
    } catch (error) {
      if (isConclaveError(error, "turn_timeout")) return { kind: "timedOut", busyAnswers, ack };
      return { kind: "failed", status: "Failed", busyAnswers, ack, error: messageOf(error) };
    }
  }
}

/** Dead letters stored under conclave.dlq.poison so far (0 when the stream does not exist yet). */
export async function poisonLetters(instrument: NatsConnection): Promise<number> {
  const subject = subjects.deadLetter("poison");
  try {
    const jsm = await jetstreamManager(instrument);
    const info = await jsm.streams.info(streams.deadLetters, { subjects_filter: subject });
    return info.state.subjects?.[subject] ?? 0;
  } catch {
    return 0;
  }
}

/** The KV status of every accepted turn that did not complete: its status, and whether its reason says poison. */
async function statusesOf(
  instrument: NatsConnection,
  acks: TurnAck[],
): Promise<{ counts: Record<string, number>; poison: number }> {
  const store = await TurnStatusStore.open(instrument);
  const counts: Record<string, number> = {};
  let poison = 0;
  for (const ack of acks) {
    const record = await store.get(ack.session_id, ack.turn_id).catch(() => null);
    const key = record?.status ?? "unknown";
    counts[key] = (counts[key] ?? 0) + 1;
    if (record?.status === "failed" && record.reason?.startsWith("poison")) poison++;
  }
  return { counts, poison };
}

/** One run: a fresh deployment in LLM mode, a short warm-up, then every session's turn at once. */
async function burstRun(plan: BenchPlan, tag: string, run: number): Promise<BurstRun> {
  const p = plan.underLoad;
  const lapses = new LeaseLapses();
  const { model, cluster, nc } = await startSimulatedModelCluster(`bench-burst-${run}`, { onLogLine: lapses.listener });
  const instrument = await cluster.connectInstrument(`bench-burst-${run}-instrument`);
  const client = await connect({ nc });
  try {
    for (let i = 0; i < 5; i++) await patientTurn(client, `${tag}-burst${run}-warm-${i}`, plan.texts[i % 3]!, 60_000);
    const lapsesBefore = lapses.count;
    const modelErrorsBefore = lapses.modelErrors;
    const lettersBefore = await poisonLetters(instrument);
    const outcomes: Outcome[] = [];
    const started = performance.now();
    const stopTicking = ticker(
      () =>
        progress(
          `  burst ${run + 1}: ${outcomes.length} of ${p.burstSessions} settled in ${round((performance.now() - started) / 1000, 1)} s`,
        ),
      5_000,
    );
    await Promise.all(
      Array.from({ length: p.burstSessions }, async (_, i) => {
        const text = plan.texts[i % plan.texts.length]!;
        outcomes.push(await patientTurn(client, `${tag}-burst${run}-${i}`, text, p.patienceMs));
      }),
    ).finally(stopTicking);
    const elapsedMs = performance.now() - started;
    const unsettled = outcomes.flatMap((o) => ((o.kind === "failed" || o.kind === "timedOut") && o.ack ? [o.ack] : []));
    const kv = await statusesOf(instrument, unsettled);
    const statuses: Record<string, number> = {};
    for (const o of outcomes)
      if (o.kind === "failed") statuses[o.status] = (statuses[o.status] ?? 0) + 1;
      else if (o.kind === "timedOut") statuses["not completed in time"] = (statuses["not completed in time"] ?? 0) + 1;
    const warnings: Record<string, number> = {};
    for (const o of outcomes)
      if (o.kind === "failed") for (const w of new Set(o.warnings ?? [])) warnings[w] = (warnings[w] ?? 0) + 1;
    const letters = (await poisonLetters(instrument)) - lettersBefore;
    const count = (kind: Outcome["kind"]) => outcomes.filter((o) => o.kind === kind).length;
    const latencies = outcomes.flatMap((o) => (o.kind === "completed" ? [o.latencyMs] : []));
    return {
      sessions: p.burstSessions,
      completed: count("completed"),
      refusedBusy: count("busy"),
      failed: count("failed"),
      timedOut: count("timedOut"),
      poisoned: Math.max(letters, kv.poison),
      poisonLetters: letters,
      lapses: lapses.count - lapsesBefore,
      modelConnectionErrors: lapses.modelErrors - modelErrorsBefore,
      busyAnswers: outcomes.reduce((n, o) => n + o.busyAnswers, 0),
      statuses,
      turnStatuses: kv.counts,
      warnings,
      latency: summarize(latencies),
      elapsedMs: round(elapsedMs, 0),
      errors: [...new Set(outcomes.flatMap((o) => (o.kind === "failed" && o.error ? [o.error] : [])))].slice(0, 3),
    };
  } finally {
    await client.close();
    await instrument.close();
    await nc.close();
    await cluster.stop();
    await model.stop();
  }
}

/** The burst: `burstRuns` runs of `burstSessions` sessions submitting one turn each at once, each on its own deployment. */
export async function runBurst(
  plan: BenchPlan,
  tag: string,
): Promise<{ modelLatencyMs: number; patienceMs: number; runs: BurstRun[] }> {
  const p = plan.underLoad;
  const runs: BurstRun[] = [];
  for (let run = 0; run < p.burstRuns; run++) {
    progress(
      `under load, burst ${run + 1}/${p.burstRuns}: ${p.burstSessions} sessions at once, LLM mode (${SIMULATED_MODEL_MS} ms model), patience ${p.patienceMs / 1000} s`,
    );
    const result = await burstRun(plan, tag, run);
    runs.push(result);
    progress(
      `under load, burst ${run + 1}: ${result.completed} Complete, ${result.refusedBusy} refused busy, ${result.failed} failed, ${result.timedOut} not in time, ${result.poisoned} poisoned, ${result.lapses} lease lapses, ${result.modelConnectionErrors} model connection errors in ${round(result.elapsedMs / 1000, 1)} s (p50 ${round(result.latency.p50, 0)} ms)`,
    );
  }
  return { modelLatencyMs: SIMULATED_MODEL_MS, patienceMs: p.patienceMs, runs };
}
