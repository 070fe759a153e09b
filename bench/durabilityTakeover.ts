/**
 * The durability section's takeovers (issue 37): a runner SIGKILLed mid-turn, time to
 * TURN_RESUMED and the model tokens spent again, on one server and on a three-node cluster (R3).
 * Each kill is the busy-day takeover's (bench/takeover.ts `killedTurn`); here it runs on both
 * deployments and the re-asked model calls are counted in tokens.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { type ConclaveProcess, spawnConclave } from "../src/cli/childProcess.ts";
import { LLM_LAYOUT } from "../src/cli/localCluster.ts";
import { submitTurn, watchTurn } from "../src/client/turns.ts";
import { TurnStatusStore } from "../src/eventlog/turnStatusStore.ts";
import { startNatsCluster } from "../src/nats/cluster.ts";
import { conclaveModel } from "../test/helpers/conclaveModel.ts";
import { type ChatRequestBody, startOpenAIServer } from "../test/helpers/openaiServer.ts";
import type { DurabilityPlan } from "./durabilityPlan.ts";
import { progress } from "./progress.ts";
import { SIMULATED_MODEL_MS, startSimulatedModelCluster } from "./simulatedModel.ts";
import { type Summary, summarize } from "./stats.ts";
import { KILL_AFTER, killedTurn, requestKey } from "./takeover.ts";

/** One runner killed mid-turn. */
export interface DurabilityKill {
  /** SIGKILL → TURN_RESUMED and → TURN_COMPLETED as the client sees them; null when it never came. */
  resumedMs: number | null;
  completedMs: number | null;
  status: string;
  modelCalls: number;
  /** Requests identical to an earlier one of the same turn, and the tokens the model served for them. */
  repeatedModelCalls: number;
  tokensRespent: number;
}

/** The kills on one deployment. */
export interface TakeoverSeries {
  deployment: "one server" | "three nodes";
  /** Model calls of the same turn when no runner dies. */
  modelCallsPerTurn: number;
  kills: DurabilityKill[];
  resumed: Summary | null;
  completed: Summary | null;
  repeatedModelCalls: number;
  tokensRespent: number;
}

export interface DurabilityTakeover {
  modelLatencyMs: number;
  killAfter: string;
  single: TakeoverSeries | { error: string };
  cluster: TakeoverSeries | { error: string };
}

/**
 * Tokens of one model call as the simulated model counts them (test/helpers/openaiServer.ts: four
 * characters a token, prompt and reply): the reply is the scripted model's, which answers the same
 * request the same way.
 */
export async function requestTokens(body: ChatRequestBody): Promise<number> {
  const prompt = body.messages.reduce((sum, message) => sum + (message.content ?? "").length, 0);
  const reply = await conclaveModel()(body, 1);
  const completion =
    "status" in reply || "hang" in reply
      ? 0
      : "toolCalls" in reply
        ? (reply.content?.length ?? 0) + reply.toolCalls.reduce((sum, call) => sum + call.arguments.length, 0)
        : reply.content.length + (reply.reasoning?.length ?? 0);
  return Math.ceil(prompt / 4) + Math.ceil(completion / 4);
}

/**
 * Tokens re-spent over one turn's requests: each request identical to an earlier one (same agent,
 * same messages: `requestKey`) asks for what the first one got, recorded in the log before the kill.
 */
export async function tokensRespent(bodies: ChatRequestBody[]): Promise<{ calls: number; tokens: number }> {
  const seen = new Set<string>();
  let calls = 0;
  let tokens = 0;
  for (const body of bodies) {
    const key = requestKey(body);
    if (seen.has(key)) {
      calls++;
      tokens += await requestTokens(body);
    }
    seen.add(key);
  }
  return { calls, tokens };
}

/** What the kills need of a deployment, on one server or three nodes. */
interface KillTarget {
  nc: NatsConnection;
  statuses: TurnStatusStore;
  processes: ConclaveProcess[];
  requests: ChatRequestBody[];
  /** Starts one more runner, so that two are up for the next kill. */
  spawnRunner(): Promise<void>;
}

/** Warm-up turns, an undisturbed turn (its model calls), then `kills` turns whose runner is SIGKILLed. */
async function killSeries(
  target: KillTarget,
  deployment: TakeoverSeries["deployment"],
  plan: DurabilityPlan,
  text: string,
  tag: string,
): Promise<TakeoverSeries> {
  const turn = async (session: string) =>
    watchTurn(target.nc, await submitTurn(target.nc, session, { text } as Parameters<typeof submitTurn>[2]), () => {});
  for (let i = 0; i < 3; i++) await turn(`${tag}-warm-${i}`);
  const before = target.requests.length;
  await turn(`${tag}-undisturbed`);
  const modelCallsPerTurn = target.requests.length - before;
  const kills: DurabilityKill[] = [];
  for (let attempt = 0; kills.length < plan.kills && attempt < plan.kills * 2; attempt++) {
    const from = target.requests.length;
    const { kill, victim } = await killedTurn(target.nc, target, target.statuses, `${tag}-kill-${attempt}`, text);
    if (!victim) {
      progress(`durability, takeover (${deployment}): the turn ended before its runner could be killed; again`);
      continue;
    }
    const respent = await tokensRespent(target.requests.slice(from));
    kills.push({
      resumedMs: kill.resumedMs,
      completedMs: kill.completedMs,
      status: kill.status,
      modelCalls: target.requests.length - from,
      repeatedModelCalls: respent.calls,
      tokensRespent: respent.tokens,
    });
    progress(
      `durability, takeover (${deployment}) ${kills.length}/${plan.kills}: kill → TURN_RESUMED ${kill.resumedMs ?? "never"} ms, → TURN_COMPLETED ${kill.completedMs ?? "never"} ms (${kill.status}); ${respent.calls} model calls repeated, ${respent.tokens} tokens re-spent`,
    );
    await target.spawnRunner();
  }
  const times = (pick: (k: DurabilityKill) => number | null) =>
    kills.map(pick).filter((ms): ms is number => ms !== null);
  const resumed = times((k) => k.resumedMs);
  const completed = times((k) => k.completedMs);
  return {
    deployment,
    modelCallsPerTurn,
    kills,
    resumed: resumed.length > 0 ? summarize(resumed) : null,
    completed: completed.length > 0 ? summarize(completed) : null,
    repeatedModelCalls: kills.reduce((n, k) => n + k.repeatedModelCalls, 0),
    tokensRespent: kills.reduce((n, k) => n + k.tokensRespent, 0),
  };
}

/** One server: the busy day's deployment (LLM layout, simulated model), two runners. */
async function singleServer(plan: DurabilityPlan, text: string, tag: string): Promise<TakeoverSeries> {
  const { model, cluster, nc } = await startSimulatedModelCluster("bench-durability-takeover");
  const observer = await cluster.connectInstrument("bench-durability-status");
  let spawned = 1;
  try {
    await cluster.spawn(`runner-${++spawned}`, ["runner"]);
    const target: KillTarget = {
      nc,
      statuses: await TurnStatusStore.open(observer),
      processes: cluster.processes,
      requests: model.requests,
      spawnRunner: async () => void (await cluster.spawn(`runner-${++spawned}`, ["runner"])),
    };
    return await killSeries(target, "one server", plan, text, `${tag}-d1`);
  } finally {
    await observer.close();
    await nc.close();
    await cluster.stop();
    await model.stop();
  }
}

/**
 * Three nodes: the cluster of `conclave up --cluster 3` (every stream and bucket R3), the LLM
 * layout with two runners, each process on one node in turn, against the simulated model.
 */
async function threeNodes(plan: DurabilityPlan, text: string, tag: string): Promise<TakeoverSeries> {
  const model = await startOpenAIServer(conclaveModel({ latencyMs: SIMULATED_MODEL_MS }));
  // A busy two-core machine can take longer than the default 20 s to elect the meta leader.
  const nats = await startNatsCluster({ nodes: 3, monitorPorts: false, readyTimeoutMs: 60_000 }).catch(
    async (error: unknown) => {
      await model.stop();
      throw error;
    },
  );
  const processes: ConclaveProcess[] = [];
  const connections: NatsConnection[] = [];
  let spawned = 0;
  const start = async (name: string, args: string[]) => {
    const process_ = spawnConclave(name, args, {
      ...process.env,
      CONCLAVE_NATS_URL: nats.urls[spawned++ % nats.urls.length],
      CONCLAVE_REPLICAS: "3",
      CONCLAVE_LOG: "quiet",
      CONCLAVE_LLM_BASE_URL: model.url,
      CONCLAVE_LLM_MODEL: `simulated-${SIMULATED_MODEL_MS}ms`,
      CONCLAVE_LLM_MAX_RETRIES: "0",
    });
    processes.push(process_);
    await process_.ready;
  };
  try {
    // Workers first, then the runners: a runner finds its workers up.
    for (const { name, args } of LLM_LAYOUT.filter((p) => p.args[0] !== "runner")) await start(name, args);
    await start("runner", ["runner"]);
    await start("runner-2", ["runner"]);
    const nc = await connectBus(busOptions("client", { servers: nats.url, name: "bench-durability-client" }));
    connections.push(nc);
    // The runner's role reads the turn statuses (which runner owns a turn); the bucket is R3.
    const observer = await connectBus(busOptions("runner", { servers: nats.url, name: "bench-durability-status" }));
    connections.push(observer);
    let runners = 2;
    const target: KillTarget = {
      nc,
      statuses: await TurnStatusStore.open(observer, { replicas: 3 }),
      processes,
      requests: model.requests,
      spawnRunner: () => start(`runner-${++runners}`, ["runner"]),
    };
    return await killSeries(target, "three nodes", plan, text, `${tag}-d3`);
  } finally {
    await Promise.allSettled(connections.map((nc) => nc.close()));
    await Promise.allSettled(processes.filter((p) => p.name.startsWith("runner")).map((p) => p.stop()));
    await Promise.allSettled(processes.filter((p) => !p.name.startsWith("runner")).map((p) => p.stop()));
    await nats.stop();
    await model.stop();
  }
}

const failed = (error: unknown, deployment: string) => {
  // One line, with the start of what follows (e.g. a node's output after "did not join its cluster").
  const message = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ").trim().slice(0, 300);
  progress(`durability, takeover (${deployment}): failed: ${message}`);
  return { error: message };
};

/** The kills on one server, then on three nodes; a deployment that fails is reported, not fatal. */
export async function runDurabilityTakeover(
  plan: DurabilityPlan,
  text: string,
  tag: string,
): Promise<DurabilityTakeover> {
  const single = await singleServer(plan, text, tag).catch((error: unknown) => failed(error, "one server"));
  const cluster = await threeNodes(plan, text, tag).catch((error: unknown) => failed(error, "three nodes"));
  return { modelLatencyMs: SIMULATED_MODEL_MS, killAfter: KILL_AFTER, single, cluster };
}
