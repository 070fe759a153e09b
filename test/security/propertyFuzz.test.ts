import { readFileSync } from "node:fs";
import type { NatsConnection } from "@nats-io/nats-core";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { AGENTS } from "../../agents/index.ts";
import { AgentAnnouncement, AgentRoster, AgentWithdrawal } from "../../src/agents/announcement.ts";
import { subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { CRITIC_NAMES } from "../../src/cognition/critics.ts";
import { AgentReply, AgentRequest } from "../../src/contracts/agent.ts";
import {
  CouncilReply,
  CouncilRequest,
  SafetyCouncilReply,
  SafetyCouncilRequest,
  VoiceRequest,
  VoiceStreamMessage,
} from "../../src/contracts/council.ts";
import { CriticReply, CriticRequest } from "../../src/contracts/critic.ts";
import { EngineEvent } from "../../src/contracts/events.ts";
import { AgentLedgerRequest, LedgerReply, LedgerRequest, LedgerResults } from "../../src/contracts/ledgerRequest.ts";
import {
  MemoryCommitReply,
  MemoryCommitRequest,
  MemoryRetrieveReply,
  MemoryRetrieveRequest,
  MemorySearchReply,
  MemorySearchRequest,
} from "../../src/contracts/memory.ts";
import { ResumeReply, ResumeRequest } from "../../src/contracts/recipeRun.ts";
import { PlanWavesReply, PlanWavesRequest } from "../../src/contracts/scheduler.ts";
import { RollbackReply, RollbackRequest } from "../../src/contracts/tool.ts";
import { CancelReply, CancelRequest, TurnAck, TurnCancelled, TurnSubmission } from "../../src/contracts/turn.ts";
import { neutralModulators, neutralStance, SENSOR_NAMES, type Sensors } from "../../src/contracts/workspace.ts";
import { DEFAULT_NATS_CONFIG } from "../../src/nats/server.ts";
import { MAX_CANCEL_BYTES } from "../../src/runtime/intake/cancel.ts";
import { MAX_SUBMISSION_BYTES } from "../../src/runtime/intake/ingress.ts";
import { MAX_LEDGER_REQUEST_BYTES } from "../../src/runtime/intake/ledgerRequests.ts";
import { MAX_RESUME_BYTES } from "../../src/runtime/intake/resume.ts";
import { MAX_WATCH_BYTES, WatchRequest } from "../../src/runtime/intake/watch.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import {
  type Body,
  connectAs,
  exchange,
  expectationFor,
  hostileBodies,
  judge,
  type NatsUser,
  natsConfUsers,
  outcomeLabel,
  type PropertyTarget,
  preview,
  replyOf,
  seedFor,
  streamOf,
  type Tally,
  timeBudget,
  ViolationLog,
  waitFor,
} from "../helpers/propertyFuzz.ts";
import { liveness } from "./hostileHelpers.ts";

/**
 * Property-based fuzzing (fast-check) of every subject Conclave serves, as
 * every user of nats.conf: whatever the body (deeply nested, huge, odd
 * unicode, wrong types, boundary numbers, missing or extra fields, mutated),
 * each request gets a valid answer or a typed one-line error reply with the
 * code its input calls for, within a deadline; a role that may not publish
 * there is refused by the server (counted, not a failure). No process may
 * die, and an ordinary turn still completes afterwards.
 *
 * Not here: the tenant subjects (`conclave.tenant.*`, reached only through a
 * tenant account's imports: test/security/tenants.test.ts), `conclave.tool.*`
 * (this stack hosts no tools), and the per-runner `conclave.toolgate.<token>`
 * and `conclave.agentstream.<token>` (random tokens nobody else knows).
 *
 * Replay: a failure prints the subject's seed and path and the command that
 * replays it. CONCLAVE_PROPERTY_SEED changes the whole file's seed (each
 * subject derives its own from it); CONCLAVE_PROPERTY_RUNS caps the runs per
 * subject; CONCLAVE_PROPERTY_BUDGET_MS bounds the whole barrage.
 */
const SEED = Number(process.env.CONCLAVE_PROPERTY_SEED ?? 0x5eed_0f0c);
const RUNS = Number(process.env.CONCLAVE_PROPERTY_RUNS ?? 200);
const BUDGET_MS = Number(process.env.CONCLAVE_PROPERTY_BUDGET_MS ?? 50_000);
/** `<subject>@<path>`: replays one counterexample (with the seed it was found with). */
const REPLAY = process.env.CONCLAVE_PROPERTY_REPLAY;
/** The longest any request may wait for its answer (the slowest valid one, a resume, waits 3 s for a settling run). */
const REQUEST_TIMEOUT_MS = 10_000;
/** After a failure, how long shrinking may go on looking for a smaller body. */
const SHRINK_MS = 15_000;
/** serveActor's decoder limit (src/bus/codec.ts decodeJson's default). */
const MAX_REQUEST_BYTES = 1_048_576;
/** Inline limits of src/runtime/intake/rollback.ts (MAX_ROLLBACK_BYTES) and memorySearch.ts. */
const MAX_ROLLBACK_BYTES = 1_024;
const MAX_MEMORY_SEARCH_BYTES = 8_192;

/** The session of the runners' subjects; the workers' requests name another, which no cancel request reaches. */
const SESSION = "pf";
const WORKER_SESSION = "pfw";
const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let stack: ConclaveProcess[] = [];
let before: ReturnType<typeof liveness>;
let maxPayload = 1_048_576;
const USERS: NatsUser[] = natsConfUsers(readFileSync(DEFAULT_NATS_CONFIG, "utf8"));
const senders: { who: NatsUser; nc: NatsConnection; violations: ViolationLog }[] = [];

beforeAll(async () => {
  stack = await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "*"]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("runner", ["runner"]),
  ]);
  before = liveness(stack);
  for (const who of USERS) {
    const nc = await connectAs(nats.url, who);
    senders.push({ who, nc, violations: new ViolationLog(nc) });
  }
  maxPayload = senders[0]?.nc.info?.max_payload ?? maxPayload;
});
afterAll(async () => {
  await Promise.allSettled(senders.map(({ nc }) => nc.close()));
});

// ── the subjects and what they answer ──────────────────────────────────────

const sensors = Object.fromEntries(SENSOR_NAMES.map((name) => [name, 0.2])) as Sensors;
const context = {
  user_message: "I'm stressed about my deadline",
  sensors,
  modulators: neutralModulators(),
  stance: neutralStance(),
  claims: [
    { id: "c1", text: "the user is stressed", source: "emotion.stress", confidence: 0.7, support: [], opposition: [] },
  ],
  episodes: [],
};
const speechAct = { intent: "support", key_points: ["acknowledge the stress"], do_not: ["lecture"] };
const ids = { session_id: WORKER_SESSION, turn_id: 1 };

const sameSession = (request: unknown): string | null => {
  const named = (request as { session_id: string }).session_id;
  return named === SESSION ? null : `the body names session ${named}, the subject ${SESSION}`;
};

const LEDGER_REQUESTS = [
  { session_id: SESSION, op: "truth.query", text: "deadline", status: "all", limit: 5 },
  { session_id: SESSION, op: "ledgers.state" },
  { session_id: SESSION, op: "truth.upsert_fact", fact: { statement: "the deadline is friday", confidence: 0.8 } },
  { session_id: SESSION, op: "task.add_item", item: { title: "write the report", status: "todo" } },
];

/** A ledger reply's result, checked against what its operation answers. */
const ledgerResult = (reply: unknown, request: unknown): string | null => {
  const { op } = request as LedgerRequest;
  const result = LedgerResults[op].safeParse((reply as LedgerReply).result);
  return result.success ? null : `${op}: ${result.error.issues[0]?.message}`;
};

const worker = (subject: string, request: z.ZodType, valid: unknown[], reply: z.ZodType): PropertyTarget => ({
  subject,
  request,
  valid,
  maxBytes: MAX_REQUEST_BYTES,
  answer: replyOf(reply),
});

const announcement = { worker: "property-fuzz", agents: [], heartbeat_ms: 1_000 };

const TARGETS: PropertyTarget[] = [
  // ── the runners' service (src/runtime/intake/service.ts), for clients ──
  {
    subject: subjects.turnSubmit(SESSION),
    request: TurnSubmission,
    valid: [
      // Idempotent: its repeats (and mutations keeping the key) queue nothing new.
      { text: "hello", user_id: "u-1", idempotency_key: "k-1", on_busy: "enqueue" },
      { text: "hi", on_busy: "reject" },
    ],
    maxBytes: MAX_SUBMISSION_BYTES,
    answer: replyOf(TurnAck, (ack) =>
      (ack as TurnAck).session_id === SESSION ? null : `an ack for session ${(ack as TurnAck).session_id}`,
    ),
    // A recipe the schema accepts is checked again by the runner.
    deeperChecks: true,
    kinds: [["on_busy"]],
  },
  {
    subject: subjects.turnCancel(SESSION),
    request: CancelRequest,
    valid: [{ turn_id: 1, reason: "not needed" }, { turn_id: 2 }],
    maxBytes: MAX_CANCEL_BYTES,
    answer: replyOf(CancelReply),
  },
  {
    subject: subjects.turnResume(SESSION),
    request: ResumeRequest,
    valid: [{ turn_id: 1, input: { approved: true }, user_id: "ana", role: "editor" }],
    maxBytes: MAX_RESUME_BYTES,
    answer: replyOf(ResumeReply),
    // An approval's answer must be { approved, reason? }: checked once the run is found waiting for one.
    deeperChecks: true,
  },
  {
    subject: subjects.turnRollback(SESSION),
    request: RollbackRequest,
    valid: [{ turn_id: 1 }],
    maxBytes: MAX_ROLLBACK_BYTES,
    answer: replyOf(RollbackReply),
  },
  {
    subject: subjects.turnWatch(SESSION),
    request: WatchRequest,
    valid: [{}, { follow: false }, { turn_id: 1, follow: true, timeout_ms: 200 }],
    maxBytes: MAX_WATCH_BYTES,
    streaming: true,
    // A follow lasts until its turn completes or its timeout_ms: many runs wait.
    budgetWeight: 5,
    emptyBody: {},
    // Following without a turn (or one that never completes) lasts its timeout_ms, silently.
    silentForMs: (request) => {
      const watch = request as WatchRequest;
      return (watch.follow ?? watch.turn_id !== undefined) ? watch.timeout_ms : 0;
    },
    answer: streamOf(EngineEvent),
  },
  {
    subject: subjects.memorySearch(SESSION),
    request: MemorySearchRequest,
    valid: [{ session_id: SESSION, query: "deadline", limit: 3 }],
    maxBytes: MAX_MEMORY_SEARCH_BYTES,
    refuses: sameSession,
    answer: replyOf(MemorySearchReply),
  },
  {
    subject: subjects.ledger(SESSION),
    request: LedgerRequest,
    valid: LEDGER_REQUESTS,
    maxBytes: MAX_LEDGER_REQUEST_BYTES,
    refuses: sameSession,
    answer: replyOf(LedgerReply, ledgerResult),
  },
  // For workers only: an agent's ctx.ledgers, recorded as the agent's.
  {
    subject: subjects.agentLedger(SESSION),
    request: AgentLedgerRequest,
    valid: LEDGER_REQUESTS.map((request) => ({ agent_id: "planning.next_step", request })),
    maxBytes: MAX_LEDGER_REQUEST_BYTES,
    refuses: (asked) => {
      const { request } = asked as AgentLedgerRequest;
      if (request.user_id !== undefined) return "user_id is not for agents";
      return sameSession(request);
    },
    answer: replyOf(LedgerReply, (reply, asked) => ledgerResult(reply, (asked as AgentLedgerRequest).request)),
  },
  // For the observer (`conclave agents`): the roster a runner plans turns with; its body is not read.
  {
    subject: subjects.agentsRoster,
    request: z.unknown(),
    valid: [{}],
    maxBytes: MAX_REQUEST_BYTES,
    ignoresBody: true,
    answer: replyOf(AgentRoster),
  },
  // ── the workers' endpoints (src/workers/*.ts), for runners ──
  ...[...AGENTS.keys()].map(
    (id): PropertyTarget => ({
      ...worker(
        subjects.agent(id),
        AgentRequest,
        [{ ...ids, agent_id: id, wave: 0, mode: "respond", round: 0, timeout_ms: 2_000, context }],
        AgentReply,
      ),
      // A request naming another agent is refused once the agent has run.
      deeperChecks: true,
      kinds: [["mode"]],
    }),
  ),
  worker(
    subjects.schedulerPlan,
    PlanWavesRequest,
    [{ ...ids, sensors, modulators: neutralModulators(), token_budget: 8_000 }],
    PlanWavesReply,
  ),
  worker(
    subjects.councilDecide,
    CouncilRequest,
    [{ ...ids, context: { ...context, consensus: 0.5, proposals: [{ source: "x", kind: "say", text: "be kind" }] } }],
    CouncilReply,
  ),
  worker(
    subjects.councilSafety,
    SafetyCouncilRequest,
    [{ ...ids, user_message: "help", reason: "safety_risk 0.9" }],
    SafetyCouncilReply,
  ),
  {
    subject: subjects.voiceRender,
    request: VoiceRequest,
    valid: [{ ...ids, user_message: "hi", speech_act: speechAct, thinking: "be brief", feedback: [], attempt: 1 }],
    maxBytes: MAX_REQUEST_BYTES,
    streaming: true,
    answer: streamOf(VoiceStreamMessage, (last) =>
      (last as VoiceStreamMessage).type === "done" ? null : `the stream ends with ${JSON.stringify(last)}`,
    ),
  },
  ...CRITIC_NAMES.map((name) =>
    worker(
      subjects.critic(name),
      CriticRequest,
      [{ ...ids, user_message: "hi", response: "Hello there.", speech_act: speechAct, attempt: 1 }],
      CriticReply,
    ),
  ),
  worker(
    subjects.memoryRetrieve,
    MemoryRetrieveRequest,
    [{ ...ids, user_message: "hi", limit: 3 }],
    MemoryRetrieveReply,
  ),
  worker(
    subjects.memoryCommit,
    MemoryCommitRequest,
    [{ episode: { ...ids, user_text: "hi", response: "hello", intent: "greet", ts: 1 } }],
    MemoryCommitReply,
  ),
  worker(
    subjects.memoryQuery,
    MemorySearchRequest,
    [{ session_id: WORKER_SESSION, query: "deadline", limit: 3 }],
    MemorySearchReply,
  ),
  // ── served, but not as requests: discovery and the cancellation broadcast ──
  ...(
    [
      [subjects.agentsAnnounce, AgentAnnouncement, announcement],
      [subjects.agentsWithdraw, AgentWithdrawal, { worker: "property-fuzz" }],
      [subjects.agentsRollcall, z.unknown(), {}],
      [subjects.turnCancelled, TurnCancelled, { session_id: SESSION, turn_id: 999_999, reason: "property fuzz" }],
    ] as const
  ).map(
    ([subject, request, valid]): PropertyTarget => ({
      subject,
      request,
      valid: [valid],
      maxBytes: MAX_REQUEST_BYTES,
      fireAndForget: true,
    }),
  ),
];

// ── the barrage ────────────────────────────────────────────────────────────

/** Per subject, per user: how its requests went (refused, ok, an error code, or a failure). */
const tallies = new Map<string, Map<string, Tally>>();
/** Per subject: what the oracle expected of the bodies sent (valid, or the refusal's code). */
const expected = new Map<string, Tally>();
const count = (tally: Tally, key: string) => {
  tally[key] = (tally[key] ?? 0) + 1;
};

const deaths = (): string | null => {
  const now = liveness(stack);
  const changed = now.filter((p, i) => p.exitCode !== null || p.signal !== null || p.pid !== before[i]?.pid);
  return changed.length > 0 ? `process(es) died or restarted: ${JSON.stringify(changed)}` : null;
};

/** One body, sent as every user at once (each on its own connection); throws what went wrong. */
async function sendAsEveryone(target: PropertyTarget, generated: Body): Promise<void> {
  const expectation = expectationFor(target, generated.payload);
  count(expected.get(target.subject)!, expectation.valid ? "valid" : expectation.code);
  const { waitMs } = waitFor(expectation, REQUEST_TIMEOUT_MS);
  const outcomes = await Promise.all(
    senders.map(({ nc, violations }) => exchange(nc, violations, target, generated.payload, waitMs)),
  );
  const problems = outcomes.flatMap((outcome, i) => {
    const { who } = senders[i]!;
    const perUser = tallies.get(target.subject)!;
    if (!perUser.has(who.user)) perUser.set(who.user, {});
    count(perUser.get(who.user)!, outcomeLabel(outcome));
    return judge(target, expectation, outcome, REQUEST_TIMEOUT_MS).map((problem) => `as ${who.user}: ${problem}`);
  });
  const died = deaths();
  if (died) problems.push(died);
  if (problems.length > 0) throw new Error(problems.join("\n"));
}

/** When the barrage began: each subject gets its share (budgetWeight) of what is left of the budget. */
let barrageStarted = 0;
const budgetFor = (target: PropertyTarget): number => {
  barrageStarted ||= performance.now();
  const left = BUDGET_MS - (performance.now() - barrageStarted);
  const weight = (t: PropertyTarget) => t.budgetWeight ?? 1;
  const weights = TARGETS.slice(TARGETS.indexOf(target)).reduce((sum, t) => sum + weight(t), 0);
  return Math.max(500, (left * weight(target)) / weights);
};

function report(target: PropertyTarget, seed: number, details: fc.RunDetails<unknown>): string {
  const [generated] = (details.counterexample as [Body] | null) ?? [];
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  return [
    `${target.subject}: the property failed after ${details.numRuns} run(s) and ${details.numShrinks} shrink(s)`,
    `  seed ${seed}, path "${details.counterexamplePath}" (file seed ${SEED})`,
    generated
      ? `  body [${generated.family}] ${generated.detail}: ${generated.payload.length} bytes: ${preview(generated.payload, 1_200)}`
      : "  (no counterexample)",
    ...error.split("\n").map((line) => `  ${line}`),
    `  replay: CONCLAVE_PROPERTY_SEED=${SEED} CONCLAVE_PROPERTY_REPLAY='${target.subject}@${details.counterexamplePath}' npx vitest run test/security/propertyFuzz.test.ts -t '${target.subject}'`,
  ].join("\n");
}

describe(`every subject, every nats.conf user, hostile bodies (seed ${SEED})`, () => {
  it("knows every user of nats.conf, the operator included", () => {
    expect(USERS.map(({ user }) => user)).toEqual(
      expect.arrayContaining(["client", "runner", "worker", "observer", "operator"]),
    );
  });

  it.each(TARGETS.map((target) => [target.subject, target] as const))(
    "%s: a valid answer or a typed one-line error, never silence",
    async (subject, target) => {
      tallies.set(subject, new Map());
      expected.set(subject, {});
      const seed = seedFor(SEED, subject);
      const path = REPLAY?.startsWith(`${subject}@`) ? REPLAY.slice(subject.length + 1) : undefined;
      const property = fc.asyncProperty(hostileBodies(target, maxPayload, seed), (generated) =>
        sendAsEveryone(target, generated),
      );
      const details = await fc.check(property, {
        seed,
        numRuns: RUNS,
        ...(path ? { path } : {}),
        plugins: [timeBudget(budgetFor(target), SHRINK_MS)],
      });
      if (details.failed) expect.fail(report(target, seed, details));
      // Some bodies were sent, and some user got through to the endpoint.
      expect(details.numRuns).toBeGreaterThan(0);
      const reached = [...tallies.get(subject)!.entries()].filter(([, tally]) =>
        Object.keys(tally).some((k) => k !== "refused"),
      );
      expect(reached.length, `no user reached ${subject}`).toBeGreaterThan(0);
    },
    BUDGET_MS + SHRINK_MS + 3 * REQUEST_TIMEOUT_MS + 10_000,
  );
});

describe("after the barrage", () => {
  it("each user is either always or never refused a subject (permissions do not depend on the body)", () => {
    const summary: string[] = [];
    for (const [subject, perUser] of tallies) {
      summary.push(`${subject}  expected ${JSON.stringify(expected.get(subject))}`);
      for (const [user, tally] of perUser) {
        summary.push(`    ${user.padEnd(9)} ${JSON.stringify(tally)}`);
        if (tally.refused) expect(Object.keys(tally), `${user} on ${subject}`).toEqual(["refused"]);
      }
    }
    console.log(`property fuzz, seed ${SEED}:\n${summary.join("\n")}`);
  });

  it("no process exited or restarted", () => {
    expect(liveness(stack)).toEqual(before);
    for (const p of stack) expect(p.child.exitCode, `${p.name} exited`).toBeNull();
  });

  it("still runs an ordinary turn end to end", async () => {
    const client = senders.find(({ who }) => who.user === "client")!.nc;
    const ack = await submitTurn(client, "pf-after", { text: "I'm feeling stressed and overwhelmed by my deadline" });
    const completed = await watchTurn(client, ack, () => {}, 30_000);
    expect(["Complete", "PartialSuccess"]).toContain(completed.payload.outcome.status);
    expect(completed.payload.response.length).toBeGreaterThan(0);
  }, 40_000);
});
