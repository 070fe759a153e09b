/**
 * A reply always reaches the user. When the council or the voice cannot
 * answer — the model's answer fails its schema, the model fails (HTTP 500,
 * a stream cut short), no worker hosts them, or the one that did is killed
 * mid-reply — the runner's deterministic council and voice answer in their
 * place, and the turn's warnings name the fallback. LLM mode, against the
 * suite's local model server.
 */
import { describe, expect, it } from "vitest";
import { defaultTurnPolicy } from "../../machines/turn/index.ts";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { TurnWarning } from "../../src/contracts/turn.ts";
import type { LlmConfig } from "../../src/llm/config.ts";
import { Runner, type RunnerOptions } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { runConclave } from "../helpers/cli.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, type ReplyHandler, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);

const TEXT = "I'm stressed about my deadline tomorrow";
/** What the model's voice would say; long, and streamed slowly, where a test cuts it short. */
const LONG_REPLY = "That sounds hard, and it makes sense that you feel the pressure. ".repeat(6).trim();
const ALL_SERVICES = ["scheduler", "council", "critics", "memory"] as const;

const llmOf = (model: OpenAIServer): LlmConfig => ({
  baseURL: model.url,
  apiKey: "k",
  model: "scripted",
  timeoutMs: 5_000,
  maxRetries: 0,
});

/** The cooperative model, but `override` answers first where it returns a reply. */
const modelWith = (override: (body: Parameters<ReplyHandler>[0]) => ReturnType<ReplyHandler> | undefined) => {
  const cooperative = conclaveModel();
  return startOpenAIServer((body, index) => override(body) ?? cooperative(body, index));
};

/** One turn with a worker set up as given and an in-process runner; both stopped after. */
async function turnWith(
  worker: Omit<Parameters<typeof startWorker>[0], "nc">,
  session: string,
  options: { runner?: RunnerOptions; onEvent?: (event: EngineEvent) => void } = {},
) {
  const hosted = await startWorker({ nc: await nats.connect("worker"), ...worker });
  const runner = await Runner.start(await nats.connect("runner"), options.runner);
  try {
    const nc = await nats.connect("client");
    const events: EngineEvent[] = [];
    const completed = await watchTurn(
      nc,
      await submitTurn(nc, session, { text: TEXT }),
      (event) => {
        events.push(event);
        options.onEvent?.(event);
      },
      30_000,
    );
    return { events, completed };
  } finally {
    await runner.stop();
    await hosted.stop();
  }
}

const warningsOf = (completed: { payload: { outcome: { status: string } } }): TurnWarning[] => {
  const outcome = completed.payload.outcome as { status: string; warnings?: TurnWarning[] };
  return outcome.status === "PartialSuccess" ? (outcome.warnings ?? []) : [];
};
const fallbacksOf = (completed: Parameters<typeof warningsOf>[0]) =>
  warningsOf(completed)
    .filter((warning) => warning.code.endsWith("_fallback"))
    .map((warning) => [warning.stage, warning.code, warning.subject]);
/** STREAM_START / STREAM_END of the reply stream, in order. */
const replyStream = (events: EngineEvent[]) =>
  events.flatMap((event) =>
    (event.kind === "STREAM_START" || event.kind === "STREAM_END") && event.payload.stream_id === "default"
      ? [event.kind]
      : [],
  );

describe("a reply the council or the voice cannot give", () => {
  it("is decided by the deterministic council when the model's decision fails its schema", async () => {
    // Valid JSON, not a council decision: rejected, retried once with the problem explained, rejected again.
    const model = await modelWith((body) =>
      body.response_format?.json_schema?.name === "council_decision"
        ? { content: JSON.stringify({ speak: "yes", mood: "fine" }) }
        : undefined,
    );
    try {
      const { events, completed } = await turnWith(
        { agents: builtinAgents("*"), services: [...ALL_SERVICES], llm: llmOf(model) },
        "fallback-council-schema",
      );
      const councilCalls = model.requests.filter(
        (request) => request.response_format?.json_schema?.name === "council_decision",
      );
      expect(councilCalls).toHaveLength(2);
      // The deterministic council decided; the model's voice rendered its speech act.
      expect(events.some((event) => event.kind === "COUNCIL_DECISION_MADE")).toBe(true);
      expect(completed.payload.response).not.toBe("");
      expect(fallbacksOf(completed)).toEqual([["council", "council_fallback", "council"]]);
      const warning = warningsOf(completed).find((each) => each.code === "council_fallback");
      expect(warning?.message).toContain("the JSON does not match the schema");
      expect(warning?.message).toContain("the deterministic council answered in its place");
    } finally {
      await model.stop();
    }
  });

  it("is rendered by the deterministic voice when the voice's model answers 500", async () => {
    const model = await modelWith((body) =>
      body.stream ? { status: 500, body: { error: { message: "model crashed", type: "server_error" } } } : undefined,
    );
    try {
      const { events, completed } = await turnWith(
        { agents: builtinAgents("*"), services: [...ALL_SERVICES], llm: llmOf(model) },
        "fallback-voice-500",
      );
      expect(model.requests.some((request) => request.stream)).toBe(true);
      const rendered = events.filter((event) => event.kind === "VOICE_RENDERED");
      expect(rendered.length).toBeGreaterThanOrEqual(1);
      expect(completed.payload.response).not.toBe("");
      // The model's decision (support, its key points) said by the deterministic voice.
      expect(completed.payload.response).toContain("Acknowledge the stress.");
      expect(fallbacksOf(completed)).toContainEqual(["council", "voice_fallback", "voice"]);
    } finally {
      await model.stop();
    }
  });

  it("starts the reply stream again when the model's stream is cut short", async () => {
    const model = await modelWith((body) => (body.stream ? { content: LONG_REPLY, chunkDelayMs: 50 } : undefined));
    let cut = false;
    try {
      const { events, completed } = await turnWith(
        { agents: builtinAgents("*"), services: [...ALL_SERVICES], llm: llmOf(model) },
        "fallback-voice-dropped",
        {
          onEvent: (event) => {
            // The model goes away mid-reply: its stream (and every later call) is cut.
            if (!cut && event.kind === "STREAM_CHUNK" && event.payload.stream_id === "default") {
              cut = true;
              void model.stop();
            }
          },
        },
      );
      expect(cut).toBe(true);
      expect(replyStream(events).slice(0, 4)).toEqual(["STREAM_START", "STREAM_END", "STREAM_START", "STREAM_END"]);
      expect(completed.payload.response).not.toBe("");
      expect(LONG_REPLY.startsWith(completed.payload.response)).toBe(false);
      expect(fallbacksOf(completed)).toContainEqual(["council", "voice_fallback", "voice"]);
    } finally {
      await model.stop();
    }
  });

  it("is given by the runner itself when no worker hosts the council and the voice", async () => {
    const model = await startOpenAIServer(conclaveModel());
    try {
      const { completed } = await turnWith(
        { agents: builtinAgents("*"), services: ["scheduler", "critics", "memory"], llm: llmOf(model) },
        "fallback-no-council",
      );
      expect(model.requests.some((request) => request.response_format?.json_schema?.name === "council_decision")).toBe(
        false,
      );
      expect(completed.payload.response).not.toBe("");
      expect(fallbacksOf(completed)).toEqual([
        ["council", "council_fallback", "council"],
        ["council", "voice_fallback", "voice"],
      ]);
      for (const warning of warningsOf(completed).filter((each) => each.code.endsWith("_fallback")))
        expect(warning.message).toMatch(/no.responders/i);
    } finally {
      await model.stop();
    }
  });

  it("is given by the runner itself when the worker hosting them is killed mid-reply", async () => {
    const model = await modelWith((body) => (body.stream ? { content: LONG_REPLY, chunkDelayMs: 100 } : undefined));
    // The council and voice in a process of their own, killed once the reply has started.
    const council = await processes.spawn("council", ["worker", "--services", "council"], {
      CONCLAVE_LLM_BASE_URL: model.url,
      CONCLAVE_LLM_MODEL: "scripted",
      CONCLAVE_LLM_MAX_RETRIES: "0",
    });
    let killed = false;
    try {
      const { events, completed } = await turnWith(
        { agents: builtinAgents("*"), services: ["scheduler", "critics", "memory"], llm: llmOf(model) },
        "fallback-worker-killed",
        {
          // A short stage: the runner stops waiting for the dead voice in time for the fallback.
          runner: { policy: { ...defaultTurnPolicy, stage_timeout_ms: 4_000 } },
          onEvent: (event) => {
            if (!killed && event.kind === "STREAM_CHUNK" && event.payload.stream_id === "default") {
              killed = true;
              council.child.kill("SIGKILL");
            }
          },
        },
      );
      expect(killed).toBe(true);
      expect(replyStream(events).slice(0, 4)).toEqual(["STREAM_START", "STREAM_END", "STREAM_START", "STREAM_END"]);
      expect(completed.payload.response).not.toBe("");
      expect(LONG_REPLY.startsWith(completed.payload.response)).toBe(false);
      expect(fallbacksOf(completed)).toEqual([["council", "voice_fallback", "voice"]]);
      // Within the stage: no "missed the stage deadline" warning for the council stage.
      expect(warningsOf(completed).filter((warning) => warning.stage === "council")).toHaveLength(1);
    } finally {
      await council.stop(1_000);
      await model.stop();
    }
  });
});

describe("conclave send", () => {
  it("prints the fallback reply and its warning, and exits 0", async () => {
    const model = await startOpenAIServer(conclaveModel());
    const hosted = await startWorker({
      nc: await nats.connect("worker"),
      agents: builtinAgents("*"),
      services: ["scheduler", "critics", "memory"],
      llm: llmOf(model),
    });
    const runner = await Runner.start(await nats.connect("runner"));
    try {
      const result = await runConclave(nats.url, ["send", "--session", "fallback-send", TEXT]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain("council_fallback");
      expect(result.stdout).toContain("voice_fallback");
      expect(result.stdout).toMatch(/reply: \S/);
      expect(result.stdout).not.toContain("(no reply)");
    } finally {
      await runner.stop();
      await hosted.stop();
      await model.stop();
    }
  });

  it("exits 0 when the council chose silence, and says so", async () => {
    // A council that chooses to stay silent: the turn completes, but nothing is said.
    const model = await modelWith((body) =>
      body.response_format?.json_schema?.name === "council_decision"
        ? {
            content: JSON.stringify({
              speak: false,
              urgency: "low",
              speech_act: { intent: "respond", key_points: [], do_not: [] },
              thinking: "Nothing to add.",
            }),
          }
        : undefined,
    );
    const hosted = await startWorker({
      nc: await nats.connect("worker"),
      agents: builtinAgents("*"),
      services: [...ALL_SERVICES],
      llm: llmOf(model),
    });
    const runner = await Runner.start(await nats.connect("runner"));
    try {
      const result = await runConclave(nats.url, ["send", "--session", "silent-send", TEXT]);
      expect(result.stdout).toContain("(no reply)");
      expect(result.code).toBe(0);
      expect(result.stderr).toContain("turn silent-send/1: the council chose not to reply");
    } finally {
      await runner.stop();
      await hosted.stop();
      await model.stop();
    }
  });
});
