import type { Msg, NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import { AGENTS } from "../../agents/index.ts";
import { subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { CRITIC_NAMES } from "../../src/cognition/critics.ts";
import { AgentRequest } from "../../src/contracts/agent.ts";
import { CouncilRequest, SafetyCouncilRequest, VoiceRequest } from "../../src/contracts/council.ts";
import { CriticRequest } from "../../src/contracts/critic.ts";
import { ErrorReply } from "../../src/contracts/errors.ts";
import { MemoryCommitRequest, MemoryRetrieveRequest } from "../../src/contracts/memory.ts";
import { ResumeRequest } from "../../src/contracts/recipeRun.ts";
import { PlanWavesRequest } from "../../src/contracts/scheduler.ts";
import { CancelRequest, TurnSubmission } from "../../src/contracts/turn.ts";
import { neutralModulators, neutralStance, SENSOR_NAMES, type Sensors } from "../../src/contracts/workspace.ts";
import { MAX_CANCEL_BYTES } from "../../src/runtime/intake/cancel.ts";
import { MAX_SUBMISSION_BYTES } from "../../src/runtime/intake/ingress.ts";
import { MAX_RESUME_BYTES } from "../../src/runtime/intake/resume.ts";
import {
  type BadInputCode,
  deadLetterCounts,
  type FuzzCase,
  type FuzzTarget,
  invalidUtf8InString,
  malformedCases,
  readDeadLetters,
  seededRandom,
} from "../helpers/fuzz.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { eventually, waitForMessage } from "../helpers/wait.ts";

/** Change it to explore; a failure prints the seed, subject and case, so it replays exactly. */
const SEED = Number(process.env.CONCLAVE_FUZZ_SEED ?? 0x5eed_0009);
/** serveActor's decoder limit (src/bus/codec.ts). */
const MAX_REQUEST_BYTES = 1_048_576;

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let processList: ConclaveProcess[] = [];
let client: NatsConnection;
let runnerRole: NatsConnection;
let observer: NatsConnection;

beforeAll(async () => {
  processList = await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "*"]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("runner", ["runner"]),
  ]);
  [client, runnerRole, observer] = await Promise.all([
    nats.connect("client"),
    nats.connect("runner"),
    nats.connect("observer"),
  ]);
});

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
const ids = { session_id: "fuzz", turn_id: 1 };

interface Target {
  subject: string;
  /** Who sends to it in a real cluster: the client submits and cancels turns, the runner calls the workers. */
  sender: "client" | "runner";
  /** Where its dead letters go. */
  source: "submit" | "cancel" | "resume" | "worker";
  streaming?: boolean;
  fuzz: FuzzTarget<z.ZodType>;
}

const target = <S extends z.ZodType>(
  subject: string,
  schema: S,
  valid: z.input<S>,
  extra: { kinds?: string[][]; streaming?: boolean } = {},
): Target => ({
  subject,
  sender: "runner",
  source: "worker",
  ...(extra.streaming ? { streaming: true } : {}),
  fuzz: { schema, valid, kinds: extra.kinds ?? [], maxBytes: MAX_REQUEST_BYTES },
});

const TARGETS: Target[] = [
  {
    subject: subjects.turnSubmit("fuzz"),
    sender: "client",
    source: "submit",
    fuzz: {
      schema: TurnSubmission,
      valid: { text: "hello", user_id: "u-1", idempotency_key: "k-1", on_busy: "enqueue" },
      kinds: [["on_busy"]],
      maxBytes: MAX_SUBMISSION_BYTES,
    },
  },
  {
    subject: subjects.turnCancel("fuzz"),
    sender: "client",
    source: "cancel",
    fuzz: { schema: CancelRequest, valid: { turn_id: 1, reason: "not needed" }, kinds: [], maxBytes: MAX_CANCEL_BYTES },
  },
  {
    subject: subjects.turnResume("fuzz"),
    sender: "client",
    source: "resume",
    fuzz: {
      schema: ResumeRequest,
      valid: { turn_id: 1, input: { approved: true }, user_id: "ana", role: "editor" },
      kinds: [],
      maxBytes: MAX_RESUME_BYTES,
    },
  },
  ...[...AGENTS.keys()].map((id) =>
    target(
      subjects.agent(id),
      AgentRequest,
      { ...ids, agent_id: id, wave: 0, mode: "respond", round: 0, timeout_ms: 2_000, context },
      { kinds: [["mode"]] },
    ),
  ),
  target(subjects.schedulerPlan, PlanWavesRequest, {
    ...ids,
    sensors,
    modulators: neutralModulators(),
    token_budget: 8_000,
  }),
  target(subjects.councilDecide, CouncilRequest, {
    ...ids,
    context: { ...context, consensus: 0.5, proposals: [{ source: "social.rapport", kind: "say", text: "be kind" }] },
  }),
  target(subjects.councilSafety, SafetyCouncilRequest, { ...ids, user_message: "help", reason: "safety_risk 0.9" }),
  target(
    subjects.voiceRender,
    VoiceRequest,
    { ...ids, user_message: "hi", speech_act: speechAct, thinking: "be brief", feedback: [], attempt: 1 },
    { streaming: true },
  ),
  ...CRITIC_NAMES.map((name) =>
    target(subjects.critic(name), CriticRequest, {
      ...ids,
      user_message: "hi",
      response: "Hello there.",
      speech_act: speechAct,
      attempt: 1,
    }),
  ),
  target(subjects.memoryRetrieve, MemoryRetrieveRequest, { ...ids, user_message: "hi", limit: 3 }),
  target(subjects.memoryCommit, MemoryCommitRequest, {
    episode: { session_id: "fuzz", turn_id: 1, user_text: "hi", response: "hello", intent: "greet", ts: 1 },
  }),
];

interface Answer {
  body: unknown;
  status: string | undefined;
  serviceError: string | undefined;
  /** Streaming only: messages after the error, the last being the empty sentinel. */
  after: Msg[];
}

async function send(nc: NatsConnection, t: Target, payload: Uint8Array): Promise<Answer> {
  if (t.streaming) {
    const received: Msg[] = [];
    for await (const msg of await nc.requestMany(t.subject, payload, { strategy: "sentinel", maxWait: 5_000 }))
      received.push(msg);
    const [first, ...after] = received;
    if (!first) throw new Error(`no reply at all on ${t.subject} within 5 s`);
    return {
      body: first.data.length > 0 ? first.json() : null,
      status: first.headers?.get("Nats-Service-Error-Code"),
      serviceError: first.headers?.get("Nats-Service-Error"),
      after,
    };
  }
  const reply = await nc.request(t.subject, payload, { timeout: 5_000 });
  return {
    body: reply.data.length > 0 ? reply.json() : null,
    status: reply.headers?.get("Nats-Service-Error-Code"),
    serviceError: reply.headers?.get("Nats-Service-Error"),
    after: [],
  };
}

const STATUS: Record<BadInputCode, string> = { bad_json: "400", invalid_request: "400", payload_too_large: "413" };

/** Each subject has its own generator (seed and subject), so its cases do not depend on which tests ran before. */
const rngFor = (subject: string) =>
  seededRandom([...subject].reduce((hash, char) => Math.imul(hash ^ char.charCodeAt(0), 16_777_619), SEED));
const sent: { target: Target; fuzz: FuzzCase }[] = [];

/** Sends one malformed message and returns what is wrong with the answer (nothing when it is a clear error reply). */
async function check(nc: NatsConnection, t: Target, fuzz: FuzzCase): Promise<string[]> {
  const problems: string[] = [];
  const where = `${t.subject} <- ${fuzz.kind}`;
  let answer: Answer;
  try {
    answer = await send(nc, t, fuzz.payload);
  } catch (error) {
    return [`${where}: no error reply (${String(error)})`];
  }
  const parsed = ErrorReply.safeParse(answer.body);
  if (!parsed.success) return [`${where}: not an error reply: ${JSON.stringify(answer.body)?.slice(0, 200)}`];
  // Rejected: it must be in the dead-letter stream (checked after the barrage).
  sent.push({ target: t, fuzz });
  const { code, message } = parsed.data.error;
  if (code !== fuzz.code) problems.push(`${where}: code ${code}, expected ${fuzz.code} (${message.slice(0, 200)})`);
  if (!fuzz.names.test(message))
    problems.push(`${where}: message does not name ${fuzz.names}: ${message.slice(0, 300)}`);
  if (answer.status !== STATUS[fuzz.code]) problems.push(`${where}: Nats-Service-Error-Code ${answer.status}`);
  if (!answer.serviceError) problems.push(`${where}: no Nats-Service-Error header`);
  // Streaming: the error, then only the empty sentinel that closes the exchange (not the 5 s maxWait).
  if (t.streaming && (answer.after.length !== 1 || answer.after[0]?.data.length !== 0)) {
    const lengths = answer.after.map((m) => m.data.length).join(",") || "nothing";
    problems.push(`${where}: after the error came ${lengths} (expected one empty sentinel)`);
  }
  return problems;
}

describe(`malformed messages on every subject Conclave listens on (seed ${SEED})`, () => {
  it.each(TARGETS.map((t) => [t.subject, t] as const))(
    "%s answers each one with a clear error",
    async (_subject, t) => {
      const nc = t.sender === "client" ? client : runnerRole;
      const cases = malformedCases(t.fuzz, rngFor(t.subject), nc.info?.max_payload ?? 1_048_576);
      const problems = await Promise.all(cases.map((fuzz) => check(nc, t, fuzz)));
      expect(problems.flat()).toEqual([]);
      expect(cases.length).toBeGreaterThanOrEqual(12);
    },
  );

  it("rejects invalid UTF-8 inside a JSON string on every subject, rather than running on U+FFFD", async () => {
    const problems = await Promise.all(
      TARGETS.map((t) => {
        const fuzz = invalidUtf8InString(t.fuzz, rngFor(`${t.subject}#utf8`));
        return check(t.sender === "client" ? client : runnerRole, t, fuzz);
      }),
    );
    expect(problems.flat()).toEqual([]);
  });

  it("sends an error to conclave.errors.<session> for a rejected fire-and-forget submission", async () => {
    const errors = client.subscribe(subjects.sessionErrors("fuzz-plain"), { max: 1 });
    const badSession = client.subscribe(subjects.sessionErrors("_"), { max: 1 });
    await client.flush();
    client.publish(subjects.turnSubmit("fuzz-plain"), '{"text": "unterminated');
    client.publish("conclave.turn.submit.not!a-session", JSON.stringify({ text: "hi" }));
    const first = (sub: typeof errors) => waitForMessage(sub, (data) => ErrorReply.parse(data));
    const [plain, invalidSession] = await Promise.all([first(errors), first(badSession)]);
    expect(plain.error.code).toBe("bad_json");
    expect(plain.error.message).toMatch(/turn for session fuzz-plain is not valid JSON/);
    expect(invalidSession.error.code).toBe("invalid_request");
    expect(invalidSession.error.message).toMatch(/bad session id in subject conclave\.turn\.submit\.not!a-session/);
  });
});

describe("after the barrage", () => {
  it("every process is still alive", () => {
    for (const p of processList) {
      expect({ name: p.name, exitCode: p.child.exitCode, signal: p.child.signalCode }).toEqual({
        name: p.name,
        exitCode: null,
        signal: null,
      });
    }
  });

  it("keeps every rejected message in the dead-letter stream, under its source", async () => {
    expect(sent.length).toBeGreaterThan(0);
    const fireAndForget = [
      `${subjects.turnSubmit("fuzz-plain")} bad_json`,
      "conclave.turn.submit.not!a-session invalid_request",
    ];
    const expected = (source: string) =>
      sent
        .filter(({ target: t }) => t.source === source)
        .map(({ target: t, fuzz }) => `${t.subject} ${fuzz.code}`)
        .concat(source === "submit" ? fireAndForget : [])
        .sort();
    // Counted first, with the stream info the runner role may read. Workers store
    // their dead letters without waiting for it: give them a moment.
    const counts = await eventually(
      () => deadLetterCounts(runnerRole),
      (all) => Object.values(all).reduce((sum, n) => sum + n, 0) >= sent.length + fireAndForget.length,
    );
    expect(counts).toEqual({
      [subjects.deadLetter("submit")]: expected("submit").length,
      [subjects.deadLetter("cancel")]: expected("cancel").length,
      [subjects.deadLetter("resume")]: expected("resume").length,
      [subjects.deadLetter("worker")]: expected("worker").length,
    });
    // Then read back, as the read-only observer, with a JetStream consumer.
    const letters = await readDeadLetters(observer);
    const stored = (source: string) =>
      letters
        .filter(({ subject }) => subject === subjects.deadLetter(source))
        .map(({ letter }) => `${letter.subject} ${letter.code}`)
        .sort();
    expect(stored("submit")).toEqual(expected("submit"));
    expect(stored("cancel")).toEqual(expected("cancel"));
    expect(stored("resume")).toEqual(expected("resume"));
    expect(stored("worker")).toEqual(expected("worker"));
    for (const { letter } of letters) {
      expect(letter.reason.length).toBeGreaterThan(10);
      expect(letter.data.length).toBeLessThanOrEqual(16_384);
    }
    // One oversize payload per subject, kept cut.
    expect(letters.filter(({ letter }) => letter.truncated)).toHaveLength(TARGETS.length);
  });

  it("still runs an ordinary turn end to end", async () => {
    const ack = await submitTurn(client, "fuzz-after", { text: "I'm feeling stressed and overwhelmed by my deadline" });
    const kinds: string[] = [];
    const completed = await watchTurn(client, ack, (event) => kinds.push(event.kind), 20_000);
    expect(completed.payload.outcome).toEqual({ status: "Complete" });
    expect(completed.payload.response.length).toBeGreaterThan(0);
    expect(kinds).toContain("AGENT_COMPLETED");
  });
});
