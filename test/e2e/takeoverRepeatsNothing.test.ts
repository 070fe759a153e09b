/**
 * A taken-over pipeline turn repeats nothing, in LLM mode across processes:
 * the runner dies (a failpoint, SIGKILL) just before the critics judge the
 * voice's second rendering, every earlier event stored; another runner takes
 * the turn over and goes on from its log. The model server sees every agent,
 * deliberation, council, voice and critic call exactly once, and the turn
 * completes once.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { submitTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type ChatRequestBody, type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { settledStatus } from "../helpers/turnStatus.ts";

const nats = useNatsServer();
let model: OpenAIServer;
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "scripted-model" }),
);

beforeAll(async () => {
  model = await startOpenAIServer(conclaveModel({ coherenceFailsFirst: true }));
  await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "*"]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
  ]);
  return () => model.stop();
});

/** Who made a model request, and with what: two requests alike are the same call made twice. */
const callOf = (body: ChatRequestBody): string =>
  JSON.stringify({
    schema: body.response_format?.json_schema?.name ?? null,
    stream: body.stream ?? false,
    messages: body.messages,
  });

const kindOf = (body: ChatRequestBody): string =>
  body.stream ? "voice" : (body.response_format?.json_schema?.name ?? "other");

async function logOf(sessionId: string, turnId: number): Promise<EngineEvent[]> {
  const nc = await nats.connect("observer");
  return readEvents(jetstream(nc), await jetstreamManager(nc), sessionId, turnId);
}

describe("a nine-stage turn whose runner dies before the critics' second verdict", () => {
  it("is taken over from its log: no agent, council, voice or critic call is made twice", async () => {
    const doomed = await processes.spawn("runner-1", ["runner"], { CONCLAVE_FAILPOINTS: "turn.before_critics_retry" });
    const died = new Promise<void>((resolve) => {
      if (doomed.child.exitCode !== null || doomed.child.signalCode !== null) resolve();
      else doomed.child.once("exit", () => resolve());
    });
    const client = await nats.connect("client");
    const ack = await submitTurn(client, "repeats-nothing", { text: "I'm stressed about my deadline tomorrow" });
    await died;
    expect(doomed.child.signalCode).toBe("SIGKILL");

    // What the dead runner left: everything up to the second rendering, not its verdict.
    const before = await logOf(ack.session_id, ack.turn_id);
    const verdictsBefore = before.flatMap((event) => (event.kind === "CRITICS_UPDATED" ? [event.payload.attempt] : []));
    expect(verdictsBefore).toEqual([1]);
    expect(before.filter((event) => event.kind === "VOICE_RENDERED").map((event) => event.payload.attempt)).toEqual([
      1, 2,
    ]);
    const callsBefore = model.requests.length;
    expect(model.requests.filter((body) => kindOf(body) === "critic_verdict").length).toBeGreaterThan(0);

    await processes.spawn("runner-2", ["runner"]);
    const status = await settledStatus(client, ack.session_id, ack.turn_id, 60_000);
    expect(status.status).toBe("done");

    const events = await logOf(ack.session_id, ack.turn_id);
    const kinds = events.map((event) => event.kind);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    expect(kinds.filter((kind) => kind === "TURN_COMPLETED")).toHaveLength(1);
    expect(kinds.at(-1)).toBe("TURN_COMPLETED");
    const resumed = events.filter((event) => event.kind === "TURN_RESUMED");
    expect(resumed.map((event) => event.payload)).toEqual([
      expect.objectContaining({ after_seq: before.length - 1, from: "last_step" }),
    ]);
    // The log holds each step once: what follows TURN_RESUMED is only the rest of the turn.
    const after = kinds.slice(kinds.indexOf("TURN_RESUMED") + 1);
    expect(after).toEqual(["CRITICS_UPDATED", "TURN_STAGE_CHANGED", "MEMORY_COMMITTED", "TURN_COMPLETED"]);
    for (const once of ["TURN_STARTED", "SCHEDULE_PLANNED", "COUNCIL_DECISION_MADE", "MEMORY_RETRIEVED"]) {
      expect(
        kinds.filter((kind) => kind === once),
        once,
      ).toHaveLength(1);
    }
    const agents = events.flatMap((event) =>
      event.kind === "AGENT_COMPLETED" ? [`${event.payload.wave}:${event.payload.agent_id}`] : [],
    );
    expect(new Set(agents).size).toBe(agents.length);
    const completed = events.at(-1);
    if (completed?.kind !== "TURN_COMPLETED") throw new Error("the turn did not complete");
    expect(completed.payload.response).toBe("That sounds hard. Let's take one small step together.");
    expect(completed.payload.outcome).toEqual({ status: "Complete" });
    // The cost counts the calls the dead runner made too (answered from the log, not made again).
    expect(Object.keys(completed.payload.usage.by_actor)).toEqual(
      expect.arrayContaining(["council", "voice", "critic:coherence", "agent:inhibition.censor"]),
    );

    // The model: every call once. After the takeover, only the critics' second verdict (and the memory's own).
    const calls = model.requests.map(callOf);
    expect(calls.filter((call, index) => calls.indexOf(call) !== index)).toEqual([]);
    const kindsAfter = model.requests.slice(callsBefore).map(kindOf);
    expect(kindsAfter.filter((kind) => ["agent_output", "council_decision", "voice"].includes(kind))).toEqual([]);
    const critics = events.flatMap((event) => (event.kind === "CRITICS_UPDATED" ? [event.payload.results.length] : []));
    expect(kindsAfter.filter((kind) => kind === "critic_verdict")).toHaveLength(critics[1] ?? -1);
    expect(model.requests.filter((body) => kindOf(body) === "agent_output")).toHaveLength(
      agents.length +
        events.flatMap((event) => (event.kind === "DELIB_ROUND_COMPLETED" ? event.payload.revisions : [])).length,
    );
    expect(model.requests.filter((body) => kindOf(body) === "council_decision")).toHaveLength(1);
    expect(model.requests.filter((body) => kindOf(body) === "voice")).toHaveLength(2);
  }, 120_000);
});
