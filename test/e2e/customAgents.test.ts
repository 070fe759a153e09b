import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { announceAgents } from "../../src/agents/announcement.ts";
import { encodeJson } from "../../src/bus/codec.ts";
import { startService } from "../../src/bus/service.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { STAGES } from "../../src/contracts/turn.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { stagesOf } from "../helpers/turns.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);

beforeAll(async () => {
  await Promise.all([
    processes.spawn("builtins", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("custom", ["worker", "--agents", "./test/fixtures/custom/agents.ts"]),
  ]);
  await processes.spawn("runner", ["runner"]);
});

async function turn(session: string, text: string): Promise<EngineEvent[]> {
  const nc = await nats.connect("client");
  const events: EngineEvent[] = [];
  await watchTurn(nc, await submitTurn(nc, session, { text }), (event) => events.push(event), 20_000);
  return events;
}

const completedBy = (events: EngineEvent[], agentId: string) =>
  events.flatMap((event) => (event.kind === "AGENT_COMPLETED" && event.payload.agent_id === agentId ? [event] : []));

describe("agents of a user's own, in a worker process of their own", () => {
  it("are scheduled beside the built-in ones, and their own output is in the turn's events", async () => {
    const events = await turn("custom-1", "Will it rain on my walk tomorrow? I'm a bit stressed about it");
    expect(stagesOf(events)).toEqual([...STAGES]);
    const plan = events.find((event) => event.kind === "SCHEDULE_PLANNED");
    expect(plan?.kind === "SCHEDULE_PLANNED" && plan.payload.waves[0]).toContain("acme.forecaster");
    const [forecast] = completedBy(events, "acme.forecaster");
    expect(forecast?.kind === "AGENT_COMPLETED" && forecast.payload.output).toEqual({
      umbrella: true,
      reason: "the user mentions rain",
      proposals: [{ kind: "say", text: "Take an umbrella." }],
    });
    // The council takes what the contract names: its proposal.
    expect(forecast?.kind === "AGENT_COMPLETED" && forecast.payload.contribution.proposals).toEqual([
      { kind: "say", text: "Take an umbrella." },
    ]);
    const builtin = completedBy(events, "inhibition.censor")[0];
    expect(forecast?.kind === "AGENT_COMPLETED" && forecast.payload.worker).not.toBe(
      builtin?.kind === "AGENT_COMPLETED" && builtin.payload.worker,
    );
  });

  it("stream named chunks, each stream bracketed by STREAM_START and STREAM_END before the agent's answer", async () => {
    const events = await turn("custom-2", "rain again");
    const streamId = "acme.forecaster:notes";
    const mine = events.filter(
      (event) =>
        (event.kind === "STREAM_START" || event.kind === "STREAM_CHUNK" || event.kind === "STREAM_END") &&
        event.payload.stream_id === streamId,
    );
    // The response interceptors screen it as a stream: chunk boundaries may move (a tail is held back), the text does not.
    expect(mine[0]?.kind).toBe("STREAM_START");
    expect(mine.at(-1)?.kind).toBe("STREAM_END");
    expect(mine.slice(1, -1).every((event) => event.kind === "STREAM_CHUNK")).toBe(true);
    expect(mine[0]?.kind === "STREAM_START" && mine[0].payload.content_type).toBe("text/plain");
    const deltas = mine.flatMap((event) => (event.kind === "STREAM_CHUNK" ? [event.payload.delta] : []));
    expect(deltas.join("")).toBe("looking at the sky… rain mentioned");
    const answered = events.indexOf(completedBy(events, "acme.forecaster")[0]!);
    expect(events.indexOf(mine.at(-1)!)).toBeLessThan(answered);
  });

  it("have their named streams screened by the response interceptors: personal data never reaches the log", async () => {
    const events = await turn("custom-pii", "rain tomorrow? contact me");
    const chunks = events.flatMap((event) =>
      event.kind === "STREAM_CHUNK" && event.payload.stream_id === "acme.forecaster:notes" ? [event.payload.delta] : [],
    );
    expect(chunks.join("")).toBe("looking at the sky… rain mentioned — write to [email]");
    expect(JSON.stringify(events)).not.toContain("forecasts@acme.example");
    const intercepted = events.find((event) => event.kind === "RESPONSE_INTERCEPTED");
    expect(intercepted?.kind === "RESPONSE_INTERCEPTED" && intercepted.payload).toMatchObject({
      action: "redact",
      stream_id: "acme.forecaster:notes",
    });
  });

  it("names an agent whose answer its own schema rejects, and the turn goes on", async () => {
    const events = await turn("custom-3", "hello there");
    const failed = events.flatMap((event) => (event.kind === "AGENT_FAILED" ? [event.payload] : []));
    expect(failed).toEqual([
      expect.objectContaining({
        agent_id: "acme.broken",
        code: "invalid_agent_output",
        message: expect.stringMatching(/count/),
      }),
    ]);
    const done = events.at(-1);
    expect(done?.kind === "TURN_COMPLETED" && done.payload.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: [{ stage: "agents", code: "invalid_agent_output", subject: "acme.broken" }],
    });
    expect(done?.kind === "TURN_COMPLETED" && done.payload.response.length).toBeGreaterThan(0);
  });

  it("checks answers on the runner too, against the schema the agent's workers announced", async () => {
    // A rogue worker: it announces a schema, then answers what the schema rejects, skipping the worker's own check.
    const nc = await nats.connect("worker");
    const service = startService(nc, "worker", { name: "rogue", version: "0.0.1" });
    service.addEndpoint("acme_rogue", {
      subject: subjects.agent("acme.rogue"),
      handler: (msg) => {
        msg.respond(
          encodeJson({
            agent_id: "acme.rogue",
            output: { level: "high" },
            contribution: {},
            elapsed_ms: 1,
            worker: "rogue",
          }),
        );
      },
    });
    const announcer = await announceAgents(nc, "rogue-worker", [
      {
        id: "acme.rogue",
        agency: "acme",
        priority: "ALWAYS_ON",
        triggers: [],
        cooldown_s: 0,
        token_budget: 10,
        description: "answers outside its schema",
        output_schema: { type: "object", properties: { level: { type: "number" } }, required: ["level"] },
      },
    ]);
    try {
      const events = await turn("custom-4", "hello again");
      const failed = events.flatMap((event) =>
        event.kind === "AGENT_FAILED" && event.payload.agent_id === "acme.rogue" ? [event.payload] : [],
      );
      expect(failed).toEqual([
        expect.objectContaining({
          code: "invalid_agent_output",
          message: expect.stringMatching(/announced output schema.*level/),
        }),
      ]);
      expect(completedBy(events, "acme.rogue")).toEqual([]);
    } finally {
      await announcer.stop();
      await service.stop();
    }
  });

  it("ignores malformed announcements, withdrawals and stream parts, and keeps running turns", async () => {
    const nc = await nats.connect("worker");
    const junk = ['{"worker":', "[]", '{"worker":"w","agents":[{"id":"Bad Id"}],"heartbeat_ms":5}', "\u0000\u00ff"];
    for (const body of junk) {
      nc.publish(subjects.agentsAnnounce, body);
      nc.publish(subjects.agentsWithdraw, body);
      nc.publish(subjects.agentStream("nobody"), body);
    }
    nc.publish(subjects.agentsWithdraw, JSON.stringify({ worker: "no-such-worker" }));
    await nc.flush();
    const events = await turn("custom-5", "rain or not?");
    expect(completedBy(events, "acme.forecaster")).toHaveLength(1);
    expect(events.at(-1)?.kind).toBe("TURN_COMPLETED");
  });

  it("are listed by conclave agents, with the built-in ones", async () => {
    const env = { ...process.env, CONCLAVE_NATS_URL: nats.url };
    const { stdout } = await promisify(execFile)(process.execPath, [CONCLAVE_BIN, "agents", "--json"], { env });
    const listed = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { id: string; agency: string; output_schema?: unknown });
    expect(listed.map((agent) => agent.id)).toEqual(
      expect.arrayContaining(["acme.forecaster", "acme.broken", "inhibition.censor"]),
    );
    expect(listed.find((agent) => agent.id === "acme.forecaster")).toMatchObject({
      agency: "acme",
      output_schema: expect.objectContaining({ type: "object" }),
    });
    expect(listed.find((agent) => agent.id === "inhibition.censor")?.output_schema).toBeUndefined();
    const readable = await promisify(execFile)(process.execPath, [CONCLAVE_BIN, "agents"], { env });
    expect(readable.stdout).toMatch(/^acme\.forecaster\s+acme\s+ALWAYS_ON .*\(own output schema\)$/m);
  });
});
