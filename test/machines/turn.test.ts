import { describe, expect, it } from "vitest";
import { createActor, toPromise } from "xstate";
import { defaultTurnPolicy, MissingActorError, SAFETY_FALLBACK_REPLY, turnMachine } from "../../machines/turn/index.ts";
import { quietOutput } from "../../src/agents/defineAgent.ts";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { STAGES } from "../../src/contracts/turn.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { ConclaveError } from "../../src/errors.ts";
import { label, never, runLocalTurn, stagesOf } from "../helpers/turns.ts";

describe("turn machine: stage order", () => {
  it("runs every stage of the pipeline in order and completes", async () => {
    const { records, output } = await runLocalTurn("I'm feeling stressed about my deadline tomorrow");
    expect(stagesOf(records)).toEqual([...STAGES]);
    expect(records[0]?.kind).toBe("TURN_STARTED");
    expect(records.at(-1)?.kind).toBe("TURN_COMPLETED");
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(output.response.length).toBeGreaterThan(0);
  });

  it("records each stage's events inside that stage", async () => {
    const { records } = await runLocalTurn("There's a bug and I'm stuck, can you help?");
    const labels = records.map(label);
    const between = (from: string, to: string) => labels.slice(labels.indexOf(from) + 1, labels.indexOf(to));
    expect(between("stage:sensing_fast", "stage:context")).toEqual(["SENSORS_FAST_UPDATED"]);
    expect(between("stage:context", "stage:agents")).toEqual(["MEMORY_RETRIEVED", "WORKSPACE_PATCHED"]);
    const agents = between("stage:agents", "stage:deliberation");
    expect(agents.slice(0, 3)).toEqual(["CONTEXT_PLANNED", "SCHEDULE_PLANNED", "WAVE_STARTED"]);
    expect(agents.at(-1)).toBe("WAVE_COMPLETED");
    expect(agents.filter((kind) => kind === "WAVE_STARTED")).toHaveLength(
      agents.filter((kind) => kind === "WAVE_COMPLETED").length,
    );
    const council = between("stage:council", "stage:critics");
    expect(council[0]).toBe("COUNCIL_DECISION_MADE");
    expect(council.at(-1)).toBe("VOICE_RENDERED");
    expect(council.slice(1, -1).every((kind) => kind.startsWith("STREAM_"))).toBe(true);
    expect(between("stage:critics", "stage:memory_commit")).toEqual(["CRITICS_UPDATED"]);
    expect(labels.slice(labels.indexOf("stage:memory_commit") + 1)).toEqual(["MEMORY_COMMITTED", "TURN_COMPLETED"]);
  });

  it("runs the always-on wave first, then the scored wave, with every agent answering once", async () => {
    const { records } = await runLocalTurn("I'm feeling really sad and overwhelmed");
    const waves = records.filter((record) => record.kind === "WAVE_STARTED").map((record) => record.payload.agents);
    expect(waves[0]).toEqual([
      "inhibition.censor",
      "inhibition.overclaim",
      "monitoring.trigger_watcher",
      "monitoring.anomaly_detector",
    ]);
    expect(waves[1]).toEqual(expect.arrayContaining(["emotion.stress", "emotion.wellbeing"]));
    const answered = records
      .filter((record) => record.kind === "AGENT_COMPLETED")
      .map((record) => record.payload.agent_id);
    expect(answered.sort()).toEqual(waves.flat().sort());
  });
});

describe("turn machine: safety early exit", () => {
  it("skips the cognitive stages and lets the safety council answer", async () => {
    const { records, output } = await runLocalTurn("I want to hurt myself, I want to die");
    expect(stagesOf(records)).toEqual(["ingest", "sensing_fast"]);
    expect(records.map(label).slice(-5)).toEqual([
      "SENSORS_FAST_UPDATED",
      "SAFETY_INTERRUPT",
      "COUNCIL_DECISION_MADE",
      "VOICE_RENDERED",
      "TURN_COMPLETED",
    ]);
    const decision = records.find((record) => record.kind === "COUNCIL_DECISION_MADE");
    expect(decision?.payload).toMatchObject({ speak: true, intent: "protect", urgency: "high" });
    expect(output.outcome.status).toBe("Complete");
  });

  it("still answers with a fixed safe reply when the safety council is unreachable", async () => {
    const { records, output } = await runLocalTurn("I want to kill myself and die", {
      safetyCouncil: async () => {
        throw new RemoteCallError(
          "conclave.council.safety",
          "no_responders",
          "no worker is serving conclave.council.safety",
        );
      },
    });
    expect(output.response).toBe(SAFETY_FALLBACK_REPLY);
    expect(output.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: [{ stage: "safety", code: "no_responders" }],
    });
    expect(records.some((record) => record.kind === "VOICE_RENDERED")).toBe(true);
  });
});

describe("turn machine: failures become outcomes, never hangs", () => {
  it("goes on without memory when retrieval fails, and says so", async () => {
    const { records, output } = await runLocalTurn("hello there, how are you today my friend?", {
      retrieveMemory: async () => {
        throw new RemoteCallError(
          "conclave.memory.retrieve",
          "no_responders",
          "no worker is serving conclave.memory.retrieve",
        );
      },
    });
    expect(stagesOf(records)).toEqual([...STAGES]);
    expect(records.some((record) => record.kind === "MEMORY_RETRIEVED")).toBe(false);
    expect(output.outcome).toEqual({
      status: "PartialSuccess",
      warnings: [
        {
          stage: "context",
          code: "no_responders",
          message: "no worker is serving conclave.memory.retrieve",
          subject: "memory",
        },
      ],
    });
    expect(records.filter((record) => record.kind === "STAGE_WARNING")).toHaveLength(1);
  });

  it("moves past a stage whose worker never answers once the stage deadline passes", async () => {
    const { records, output } = await runLocalTurn(
      "tell me something",
      { decide: (_request, signal) => never(signal) },
      { stage_timeout_ms: 50 },
    );
    expect(stagesOf(records)).toEqual([...STAGES]);
    expect(output.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: [{ stage: "council", code: "timeout" }],
    });
    expect(output.response).toBe("");
  });

  it("records a failed agent and names it in the outcome while the others answer", async () => {
    const { records, output } = await runLocalTurn("I'm so stressed", {
      callAgent: async (request) => {
        if (request.agent_id === "monitoring.anomaly_detector") throw new RemoteCallError("x", "agent_failed", "boom");
        return {
          agent_id: request.agent_id,
          contribution: quietOutput(),
          elapsed_ms: 0,
          worker: "t",
        };
      },
    });
    const failed = records.filter((record) => record.kind === "AGENT_FAILED");
    expect(failed.map((record) => record.payload)).toEqual([
      { wave: 0, agent_id: "monitoring.anomaly_detector", code: "agent_failed", message: "boom" },
    ]);
    expect(output.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: [{ stage: "agents", subject: "monitoring.anomaly_detector" }],
    });
    const waveZero = records.find((record) => record.kind === "WAVE_COMPLETED");
    expect(waveZero?.payload).toEqual({ wave: 0, results: 3, failed: 1 });
  });

  it("counts an agent that never answers as timed out when the wave's deadline passes", async () => {
    const { records, output } = await runLocalTurn(
      "I'm so stressed",
      {
        callAgent: (request, signal) =>
          request.agent_id === "inhibition.censor"
            ? never(signal)
            : Promise.resolve({
                agent_id: request.agent_id,
                contribution: quietOutput(),
                elapsed_ms: 0,
                worker: "t",
              }),
      },
      { agent_timeout_ms: 40 },
    );
    const failed = records.filter((record) => record.kind === "AGENT_FAILED").map((record) => record.payload);
    expect(failed).toEqual([
      { wave: 0, agent_id: "inhibition.censor", code: "timeout", message: expect.stringContaining("40 ms") },
    ]);
    expect(output.outcome.status).toBe("PartialSuccess");
    expect(stagesOf(records)).toContain("memory_commit");
  });

  it("completes with warnings when the host provided no actors at all", async () => {
    const actor = createActor(turnMachine, {
      input: {
        session_id: "bare",
        turn_id: 1,
        text: "hi",
        policy: { ...defaultTurnPolicy, stage_timeout_ms: 100 },
        modulators: neutralModulators(),
        stance: neutralStance(),
      },
    });
    actor.start();
    const output = await toPromise(actor);
    expect(output.outcome.status).toBe("PartialSuccess");
    if (output.outcome.status === "PartialSuccess") {
      expect(output.outcome.warnings.map((warning) => warning.stage)).toEqual([
        "sensing_fast",
        "context",
        "agents",
        "deliberation",
        "council",
        "critics",
        "memory_commit",
      ]);
      expect(output.outcome.warnings[0]?.message).toMatch(/must provide the 'senseFast' actor/);
    }
  });

  it("warns with the stable code of a missing actor", async () => {
    expect(new MissingActorError("senseFast")).toBeInstanceOf(ConclaveError);
    const actor = createActor(turnMachine, {
      input: {
        session_id: "bare",
        turn_id: 1,
        text: "hi",
        policy: { ...defaultTurnPolicy, stage_timeout_ms: 100 },
        modulators: neutralModulators(),
        stance: neutralStance(),
      },
    });
    actor.start();
    const output = await toPromise(actor);
    const codes = output.outcome.status === "PartialSuccess" ? output.outcome.warnings.map((w) => w.code) : [];
    expect(codes).toHaveLength(7);
    expect(new Set(codes)).toEqual(new Set(["missing_actor"]));
  });

  it("keeps a foreign error's code only when it is a wire code", async () => {
    const failingWith = (code: string) => async () => {
      throw Object.assign(new Error(`failed with ${code}`), { code });
    };
    const codeOfWarning = async (code: string) => {
      const { output } = await runLocalTurn("hello there", { retrieveMemory: failingWith(code) });
      return output.outcome.status === "PartialSuccess" ? output.outcome.warnings[0]?.code : undefined;
    };
    expect(await codeOfWarning("no_responders")).toBe("no_responders");
    expect(await codeOfWarning("ECONNRESET")).toBe("internal");
  });
});

describe("turn machine: deliberation and council", () => {
  it("deliberates at most the policy's rounds when consensus stays low", async () => {
    const { records } = await runLocalTurn("hello", {
      deliberate: async ({ workspace }) => ({ workspace, consensus: 0.4, revisions: [], usage: {} }),
    });
    expect(
      records.filter((record) => record.kind === "DELIB_ROUND_STARTED").map((record) => record.payload.round),
    ).toEqual([0, 1, 2]);
  });

  it("stops deliberating as soon as consensus reaches 0.9", async () => {
    let calls = 0;
    const { records } = await runLocalTurn("hello", {
      deliberate: async ({ workspace }) => ({
        workspace,
        consensus: ++calls === 2 ? 0.92 : 0.5,
        revisions: [],
        usage: {},
      }),
    });
    expect(records.filter((record) => record.kind === "DELIB_ROUND_STARTED")).toHaveLength(2);
    expect(
      records.filter((record) => record.kind === "CONSENSUS_UPDATED").map((record) => record.payload.level),
    ).toEqual([0.5, 0.92]);
  });

  it("renders no reply when the council decides not to speak", async () => {
    const { records, output } = await runLocalTurn("hello", {
      decide: async () => ({
        decision: {
          speak: false,
          urgency: "low",
          speech_act: { intent: "listen", key_points: [], do_not: [] },
          thinking: "nothing to add",
        },
      }),
    });
    expect(records.some((record) => record.kind === "VOICE_RENDERED")).toBe(false);
    expect(output.response).toBe("");
    expect(output.outcome.status).toBe("Complete");
  });
});

describe("turn machine: streams, evaluator loop and cost", () => {
  it("streams the thinking, then the reply token by token, and the chunks add up to the reply", async () => {
    const { records, output } = await runLocalTurn("There's a bug in my build and I'm stuck. Can you help?");
    const streams = records.filter((record) => record.kind.startsWith("STREAM_"));
    expect(streams.filter((record) => record.kind === "STREAM_START").map((record) => record.payload)).toEqual([
      { stream_id: "thinking", content_type: "text/plain", attempt: 1 },
      { stream_id: "default", content_type: "text/plain", attempt: 1 },
    ]);
    const chunks = (id: string) =>
      records.flatMap((record) =>
        record.kind === "STREAM_CHUNK" && record.payload.stream_id === id ? [record.payload] : [],
      );
    expect(
      chunks("default")
        .map((chunk) => chunk.delta)
        .join(""),
    ).toBe(output.response);
    expect(chunks("default").map((chunk) => chunk.index)).toEqual(chunks("default").map((_, index) => index));
    expect(chunks("default").length).toBeGreaterThan(3);
    const ends = records.filter((record) => record.kind === "STREAM_END").map((record) => record.payload);
    expect(ends).toEqual([
      { stream_id: "thinking", chunks: chunks("thinking").length },
      { stream_id: "default", chunks: chunks("default").length },
    ]);
  });

  it("re-renders with the critics' feedback until they pass", async () => {
    const { records, output } = await runLocalTurn("Do you think you feel lonely? Are you real?");
    const verdicts = records.flatMap((record) => (record.kind === "CRITICS_UPDATED" ? [record.payload] : []));
    expect(verdicts.map((verdict) => [verdict.attempt, verdict.passed])).toEqual([
      [1, false],
      [2, true],
    ]);
    expect(verdicts[0]?.results.find((result) => !result.passed)?.critic).toBe("do_not");
    const renderings = records.flatMap((record) => (record.kind === "VOICE_RENDERED" ? [record.payload] : []));
    expect(renderings.map((rendering) => rendering.attempt)).toEqual([1, 2]);
    expect(renderings[0]?.text).toMatch(/I feel/);
    expect(output.response).not.toMatch(/I feel/);
    expect(output.outcome).toEqual({ status: "Complete" });
  });

  it("keeps the last reply and records the failure once the retries are spent", async () => {
    const { records, output } = await runLocalTurn(
      "hello there",
      {
        runCritics: async (request) => ({
          results: [
            { critic: "picky", passed: false, score: 0.1, feedback: `never happy (attempt ${request.attempt})` },
          ],
          failures: [],
          usage: {},
        }),
      },
      { max_voice_retries: 2 },
    );
    expect(records.filter((record) => record.kind === "VOICE_RENDERED")).toHaveLength(3);
    expect(output.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: [{ stage: "critics", code: "critic_failed", subject: "critic:picky" }],
    });
    expect(output.response.length).toBeGreaterThan(0);
  });

  it("warns about a critic that could not judge, and goes on with the others' verdict", async () => {
    const { output } = await runLocalTurn("hello there", {
      runCritics: async () => ({
        results: [{ critic: "length", passed: true, score: 1, feedback: "" }],
        failures: [{ critic: "safety", code: "no_responders", message: "no worker is serving conclave.critic.safety" }],
        usage: {},
      }),
    });
    expect(output.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: [{ stage: "critics", code: "no_responders", subject: "critic:safety" }],
    });
  });

  it("adds every actor's token usage into the turn's cost summary", async () => {
    const usage = (tokens: number) => ({ prompt_tokens: tokens, completion_tokens: 1 });
    const { records } = await runLocalTurn("I'm stressed about my deadline", {
      callAgent: async (request) => ({
        agent_id: request.agent_id,
        contribution: quietOutput(),
        elapsed_ms: 0,
        worker: "t",
        usage: usage(10),
      }),
      decide: async () => ({
        decision: {
          speak: true,
          urgency: "low",
          speech_act: { intent: "support", key_points: [], do_not: [] },
          thinking: "",
        },
        usage: usage(100),
      }),
      renderVoice: async (_request, _signal, onStream) => {
        onStream({ type: "start", stream_id: "default", content_type: "text/plain" });
        onStream({ type: "chunk", stream_id: "default", delta: "That sounds hard." });
        onStream({ type: "end", stream_id: "default" });
        return { text: "That sounds hard.", usage: usage(1000) };
      },
    });
    const completed = records.find((record) => record.kind === "TURN_COMPLETED");
    if (completed?.kind !== "TURN_COMPLETED") throw new Error("no TURN_COMPLETED");
    const agents = records.filter((record) => record.kind === "AGENT_COMPLETED").length;
    expect(completed.payload.usage.by_actor.council).toEqual(usage(100));
    expect(completed.payload.usage.by_actor.voice).toEqual(usage(1000));
    expect(completed.payload.usage.prompt_tokens).toBe(10 * agents + 100 + 1000);
    expect(completed.payload.usage.completion_tokens).toBe(agents + 2);
  });
});

describe("turn machine: deliberation with the real agents", () => {
  it("asks the agents in a contested claim to revise, and records what they changed", async () => {
    // The skeptic opposes the weakly held claims; the authors withdraw or it concedes.
    const { records } = await runLocalTurn("I'm so happy, I finally finished my thesis today!");
    const rounds = records.flatMap((record) => (record.kind === "DELIB_ROUND_COMPLETED" ? [record.payload] : []));
    const levels = records.flatMap((record) => (record.kind === "CONSENSUS_UPDATED" ? [record.payload.level] : []));
    expect(rounds.length).toBeGreaterThanOrEqual(2);
    expect(levels[0]).toBeLessThan(0.9);
    expect(rounds[1]?.revisions.length).toBeGreaterThan(0);
    expect(levels.at(-1)!).toBeGreaterThan(levels[0]!);
  });
});
