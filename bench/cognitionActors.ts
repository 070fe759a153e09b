/**
 * What running the scheduler, council, voice and critics as XState actors
 * costs a runner that hosts them (`--cognition runner`, the default
 * `conclave up` layout), against plain calls: an A/B of the same layout.
 *
 *   npx tsx bench/cognitionActors.ts          (BENCH_QUICK=1: short blocks)
 *
 * One nats-server, one worker (agents and memory) and a runner in this
 * process. The runner is started once per block, running its cognition as
 * actors (A) or as direct calls (B); blocks alternate A and B (the order
 * flips each round), so background load falls on both alike. Each block runs
 * the same texts from a few concurrent sessions after a warm-up; CPU is this
 * process's (runner, worker and client together), so A − B is the actors' cost.
 */
import { builtinAgents } from "../src/agents/builtins.ts";
import { busOptions, connectBus, type Role } from "../src/bus/connection.ts";
import { type ConclaveClient, connect } from "../src/client/index.ts";
import type { CognitionBackend } from "../src/cognition/backend.ts";
import { CRITIC_NAMES } from "../src/cognition/critics.ts";
import { planWaves } from "../src/cognition/scheduler.ts";
import type { CouncilRequest, VoiceRequest } from "../src/contracts/council.ts";
import type { CriticRequest } from "../src/contracts/critic.ts";
import type { PlanWavesRequest } from "../src/contracts/scheduler.ts";
import { startNatsServer } from "../src/nats/server.ts";
import { Runner } from "../src/runtime/runner/runner.ts";
import { startCognitionActors } from "../src/runtime/turnServices/cognitionActors.ts";
import { startWorker } from "../src/workers/startWorker.ts";
import { progress } from "./progress.ts";
import { round, summarize } from "./stats.ts";

const quick = process.env.BENCH_QUICK === "1";
const ROUNDS = quick ? 3 : 6;
const TURNS_PER_BLOCK = quick ? 120 : 400;
const WARMUP_TURNS = quick ? 20 : 60;
const SESSIONS = 4;
const TEXTS = [
  "I'm stressed about my deadline and my manager keeps adding work",
  "Can you help me plan my week?",
  "I feel a bit lonely since I moved to a new city",
  "I'm so happy, I got the job!",
];

type Mode = "actors" | "direct";

interface Block {
  mode: Mode;
  turns: number;
  cpuMsPerTurn: number;
  latencies: number[];
}

async function block(url: string, mode: Mode, round: number, client: ConclaveClient): Promise<Block> {
  const nc = await connectBus(busOptions("runner" as Role, { servers: url, persistent: false }));
  const runner = await Runner.start(nc, { hostCognition: true, cognitionCalls: mode });
  try {
    let next = 0;
    const latencies: number[] = [];
    const run = async (total: number, tag: string, keep: boolean) => {
      const session = async (index: number) => {
        while (next < total) {
          const at = next++;
          const started = performance.now();
          const result = await client.submit(`${tag}-${index}`, TEXTS[at % TEXTS.length]!).result;
          if (result.outcome.status !== "Complete") throw new Error(`turn ${at}: ${result.outcome.status}`);
          if (keep) latencies.push(performance.now() - started);
        }
      };
      next = 0;
      await Promise.all(Array.from({ length: SESSIONS }, (_, index) => session(index)));
    };
    await run(WARMUP_TURNS, `warm-${mode}-${round}`, false);
    const before = process.cpuUsage();
    await run(TURNS_PER_BLOCK, `b-${mode}-${round}`, true);
    const used = process.cpuUsage(before);
    return {
      mode,
      turns: latencies.length,
      cpuMsPerTurn: (used.user + used.system) / 1000 / latencies.length,
      latencies,
    };
  } finally {
    await runner.stop();
    await nc.close();
  }
}

/**
 * The actors' own cost, without NATS or a turn around them: a turn's seven calls (a plan, a decision,
 * a rendering, four critics) through the cognition actors, against the same backend called directly.
 * The backend answers at once with fixed replies, so what differs is the actor machinery alone.
 */
async function isolated(): Promise<{ actorsUs: number; directUs: number }> {
  const reply = {
    decision: {
      speak: true,
      urgency: "normal",
      speech_act: { intent: "respond", key_points: [], do_not: [] },
      thinking: "",
    },
  };
  const backend: CognitionBackend = {
    name: "fixed",
    decide: async () => reply as Awaited<ReturnType<CognitionBackend["decide"]>>,
    render: async () => ({ text: "ok" }),
    judge: async (critic) => ({ result: { critic, passed: true, score: 1, feedback: "" } }),
  };
  const actors = startCognitionActors({ backend, cooldowns: { load: async () => ({}), save: async () => {} } });
  const signal = new AbortController().signal;
  const turn = (id: number) => ({ session_id: "bench", turn_id: id });
  const plan = { ...turn(0), sensors: {}, modulators: {}, token_budget: 1000 } as unknown as PlanWavesRequest;
  const viaActors = async (id: number) => {
    await actors.plan({ request: { ...plan, turn_id: id }, manifests: [], now: 0 }, signal);
    await actors.decide(turn(id) as CouncilRequest, signal);
    await actors.render(turn(id) as VoiceRequest, () => {}, signal);
    await Promise.all(CRITIC_NAMES.map((name) => actors.judge(name, turn(id) as CriticRequest, signal)));
  };
  const cooldowns = { load: async (_session: string) => ({}), save: async (_session: string, _next: unknown) => {} };
  const direct = async (id: number) => {
    const { cooldowns: next } = planWaves([], {
      sensors: plan.sensors,
      modulators: plan.modulators,
      tokenBudget: plan.token_budget,
      cooldowns: await cooldowns.load(plan.session_id),
      now: 0,
    });
    await cooldowns.save(plan.session_id, next);
    await backend.decide(turn(id) as CouncilRequest, signal);
    await backend.render(turn(id) as VoiceRequest, () => {}, signal);
    await Promise.all(CRITIC_NAMES.map((name) => backend.judge(name, turn(id) as CriticRequest, signal)));
  };
  const cpuPerTurnUs = async (run: (id: number) => Promise<void>, turns: number) => {
    const before = process.cpuUsage();
    for (let id = 0; id < turns; id++) await run(id);
    const used = process.cpuUsage(before);
    return (used.user + used.system) / turns;
  };
  const turns = quick ? 2_000 : 10_000;
  await cpuPerTurnUs(viaActors, turns / 4); // warm-up
  await cpuPerTurnUs(direct, turns / 4);
  const a: number[] = [];
  const b: number[] = [];
  for (let at = 0; at < ROUNDS; at++) {
    a.push(await cpuPerTurnUs(viaActors, turns));
    b.push(await cpuPerTurnUs(direct, turns));
  }
  actors.stop();
  const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
  return { actorsUs: round(median(a), 1), directUs: round(median(b), 1) };
}

async function main(): Promise<void> {
  const alone = await isolated();
  progress(`in isolation: ${alone.actorsUs} µs CPU per turn as actors, ${alone.directUs} µs as direct calls`);
  const server = await startNatsServer();
  const open = (role: Role) => connectBus(busOptions(role, { servers: server.url, persistent: false }));
  const worker = await startWorker({ nc: await open("worker"), agents: builtinAgents("*"), services: ["memory"] });
  const client = await connect({ nc: await open("client") });
  const blocks: Block[] = [];
  try {
    for (let at = 0; at < ROUNDS; at++) {
      const order: Mode[] = at % 2 === 0 ? ["actors", "direct"] : ["direct", "actors"];
      for (const mode of order) {
        const done = await block(server.url, mode, at, client);
        blocks.push(done);
        progress(
          `round ${at + 1}/${ROUNDS} ${mode}: ${round(done.cpuMsPerTurn, 3)} CPU ms/turn, p50 ${round(summarize(done.latencies).p50, 2)} ms`,
        );
      }
    }
  } finally {
    await client.close();
    await worker.stop();
    await server.stop();
  }
  const of = (mode: Mode) => {
    const mine = blocks.filter((done) => done.mode === mode);
    const cpu = mine.map((done) => done.cpuMsPerTurn).sort((a, b) => a - b);
    return {
      turns: mine.reduce((sum, done) => sum + done.turns, 0),
      cpuMsPerTurn: round(cpu[Math.floor(cpu.length / 2)]!, 3),
      p50: round(summarize(mine.flatMap((done) => done.latencies)).p50, 2),
    };
  };
  const actors = of("actors");
  const direct = of("direct");
  console.log(
    `\n${quick ? "BENCH_QUICK: " : ""}${ROUNDS} rounds of ${TURNS_PER_BLOCK} turns per mode, ${SESSIONS} sessions`,
  );
  console.log("| cognition in the runner | turns | CPU ms/turn (median of blocks) | p50 ms |");
  console.log("| --- | --- | --- | --- |");
  console.log(`| actors (A) | ${actors.turns} | ${actors.cpuMsPerTurn} | ${actors.p50} |`);
  console.log(`| direct calls (B) | ${direct.turns} | ${direct.cpuMsPerTurn} | ${direct.p50} |`);
  console.log(
    `| A − B | | ${round(actors.cpuMsPerTurn - direct.cpuMsPerTurn, 3)} | ${round(actors.p50 - direct.p50, 2)} |`,
  );
  // Paired by round (A and B ran back to back): the spread says how much of A − B is the machine's load.
  const pairs = [];
  for (let at = 0; at < ROUNDS; at++) {
    const [x, y] = [
      blocks.find((done, index) => done.mode === "actors" && Math.floor(index / 2) === at)!,
      blocks.find((done, index) => done.mode === "direct" && Math.floor(index / 2) === at)!,
    ];
    pairs.push(round(x.cpuMsPerTurn - y.cpuMsPerTurn, 2));
  }
  console.log(`\nA − B CPU ms/turn by round: ${pairs.join(", ")}`);
  console.log(
    `in isolation (no NATS; a turn's 7 calls, fixed replies): ${alone.actorsUs} µs CPU per turn as actors, ${alone.directUs} µs direct: ${round(alone.actorsUs - alone.directUs, 1)} µs for the actors`,
  );
}

await main();
