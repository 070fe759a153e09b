import { once } from "node:events";
import type { NatsConnection } from "@nats-io/nats-core";
import type { ConclaveProcess } from "../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../src/client/turns.ts";
import type { EngineEvent } from "../src/contracts/events.ts";
import { TurnStatusStore } from "../src/eventlog/turnStatusStore.ts";
import type { ChatRequestBody } from "../test/helpers/openaiServer.ts";
import type { BenchCluster } from "./cluster.ts";
import type { BenchPlan } from "./plan.ts";
import { progress } from "./progress.ts";
import { SIMULATED_MODEL_MS, startSimulatedModelCluster } from "./simulatedModel.ts";
import { round, type Summary, summarize } from "./stats.ts";

/** The event after which the runner is killed: wave 0's agents have answered (recorded), wave 1 is next. */
export const KILL_AFTER = "WAVE_COMPLETED";

export interface TakeoverKill {
  session: string;
  /** SIGKILL → TURN_RESUMED seen by the client, and → TURN_COMPLETED; null when it never came. */
  resumedMs: number | null;
  completedMs: number | null;
  status: string;
  /** Model calls made for the turn (all attempts), and how many repeated an identical earlier request of it. */
  modelCalls: number;
  repeatedModelCalls: number;
}

export interface TakeoverRun {
  modelLatencyMs: number;
  killAfter: string;
  /** Model calls of the same turn when no runner dies. */
  modelCallsPerTurn: number;
  kills: TakeoverKill[];
  resumed: Summary | null;
  completed: Summary | null;
  /** Over all killed turns: model calls beyond the undisturbed turn's, and identical repeats. */
  extraModelCalls: number;
  repeatedModelCalls: number;
}

/** A model request's identity: the same agent asked the same thing (system and user messages, schema). */
export const requestKey = (body: ChatRequestBody) =>
  JSON.stringify([body.response_format?.json_schema?.name ?? (body.stream ? "stream" : ""), body.messages]);

/** Model requests identical to an earlier one of `bodies`: asked again. */
export const repeats = (bodies: ChatRequestBody[]) => bodies.length - new Set(bodies.map(requestKey)).size;

/** SIGKILLs a process and waits for its exit (nothing when it has already exited). */
export async function kill(victim: ConclaveProcess): Promise<void> {
  if (victim.child.exitCode !== null || victim.child.signalCode !== null) return;
  const exited = once(victim.child, "exit");
  victim.child.kill("SIGKILL");
  await exited;
}

/**
 * One turn, its runner SIGKILLed once KILL_AFTER is stored: times from the
 * kill to TURN_RESUMED and TURN_COMPLETED as the client sees them. `cluster`
 * holds the runners that may own it (also a three-node deployment's: bench/durabilityTakeover.ts).
 */
export async function killedTurn(
  nc: NatsConnection,
  cluster: Pick<BenchCluster, "processes">,
  statuses: TurnStatusStore,
  session: string,
  text: string,
): Promise<{ kill: Omit<TakeoverKill, "modelCalls" | "repeatedModelCalls">; victim: ConclaveProcess | null }> {
  const ack = await submitTurn(nc, session, { text } as Parameters<typeof submitTurn>[2]);
  let killedAt: number | null = null;
  let resumedAt: number | null = null;
  let victim: ConclaveProcess | null = null;
  let killing: Promise<void> | null = null;
  const onEvent = (event: EngineEvent) => {
    if (event.kind === "TURN_RESUMED" && resumedAt === null) resumedAt = performance.now();
    if (event.kind !== KILL_AFTER || killing) return;
    killing = (async () => {
      const owner = (await statuses.get(session, ack.turn_id))?.runner;
      victim =
        cluster.processes.find(
          (p) => p.name.startsWith("runner") && p.child.exitCode === null && owner?.endsWith(`:${p.child.pid}`),
        ) ?? null;
      if (!victim) return;
      killedAt = performance.now();
      await kill(victim);
    })();
  };
  const completed = await watchTurn(nc, ack, onEvent, 120_000).catch(() => null);
  await killing;
  const completedAt = completed ? performance.now() : null;
  const since = (at: number | null) => (at !== null && killedAt !== null ? round(at - killedAt, 1) : null);
  return {
    kill: {
      session,
      resumedMs: since(resumedAt),
      completedMs: since(completedAt),
      status: completed?.payload.outcome.status ?? "not completed",
    },
    victim: killedAt === null ? null : victim,
  };
}

/**
 * Takeover: two runners (and the three workers) in LLM mode against the
 * simulated model; one turn at a time, its runner killed with SIGKILL once
 * wave 0 is recorded, a new runner started after the turn ends so two are
 * up for the next kill. The model server counts each turn's calls: any
 * beyond the undisturbed turn's were made again.
 */
export async function runTakeover(plan: BenchPlan, tag: string): Promise<TakeoverRun> {
  const { model, cluster, nc } = await startSimulatedModelCluster("bench-takeover");
  const observer = await cluster.connectInstrument("bench-takeover-status");
  let spawned = 1;
  try {
    await cluster.spawn(`runner-${++spawned}`, ["runner"]);
    const statuses = await TurnStatusStore.open(observer);
    const text = plan.texts[2]!;
    const turn = async (session: string) => {
      const ack = await submitTurn(nc, session, { text } as Parameters<typeof submitTurn>[2]);
      return watchTurn(nc, ack, () => {});
    };
    for (let i = 0; i < 3; i++) await turn(`${tag}-to-warm-${i}`);
    const before = model.requests.length;
    await turn(`${tag}-to-undisturbed`);
    const modelCallsPerTurn = model.requests.length - before;
    progress(`busy day, takeover: an undisturbed turn makes ${modelCallsPerTurn} model calls`);
    const kills: TakeoverKill[] = [];
    for (let attempt = 0; kills.length < plan.busyDay.kills && attempt < plan.busyDay.kills * 2; attempt++) {
      const from = model.requests.length;
      const { kill, victim } = await killedTurn(nc, cluster, statuses, `${tag}-to-kill-${attempt}`, text);
      const bodies = model.requests.slice(from);
      if (!victim) {
        progress(`busy day, takeover: the turn ended before its runner could be killed; again`);
        continue;
      }
      kills.push({ ...kill, modelCalls: bodies.length, repeatedModelCalls: repeats(bodies) });
      progress(
        `busy day, takeover ${kills.length}/${plan.busyDay.kills}: kill → TURN_RESUMED ${kill.resumedMs ?? "never"} ms, → TURN_COMPLETED ${kill.completedMs ?? "never"} ms (${kill.status}); ${bodies.length} model calls, ${repeats(bodies)} repeated`,
      );
      // Two runners again for the next kill (started now, so its start-up does not overlap a takeover).
      await cluster.spawn(`runner-${++spawned}`, ["runner"]);
    }
    const times = (pick: (k: TakeoverKill) => number | null) =>
      kills.map(pick).filter((ms): ms is number => ms !== null);
    const resumed = times((k) => k.resumedMs);
    const completed = times((k) => k.completedMs);
    return {
      modelLatencyMs: SIMULATED_MODEL_MS,
      killAfter: KILL_AFTER,
      modelCallsPerTurn,
      kills,
      resumed: resumed.length > 0 ? summarize(resumed) : null,
      completed: completed.length > 0 ? summarize(completed) : null,
      extraModelCalls: kills.reduce((n, k) => n + Math.max(0, k.modelCalls - modelCallsPerTurn), 0),
      repeatedModelCalls: kills.reduce((n, k) => n + k.repeatedModelCalls, 0),
    };
  } finally {
    await observer.close();
    await nc.close();
    await cluster.stop();
    await model.stop();
  }
}
