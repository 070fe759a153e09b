import { describe, expect, it } from "vitest";
import { createActor, toPromise } from "xstate";
import { defaultTurnPolicy, SAFETY_FALLBACK_REPLY, turnMachine } from "../../machines/turn.ts";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { STAGES } from "../../src/contracts/turn.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
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
    expect(agents[0]).toBe("WAVE_STARTED");
    expect(agents.at(-1)).toBe("WAVE_COMPLETED");
    expect(agents.filter((kind) => kind === "WAVE_STARTED")).toHaveLength(
      agents.filter((kind) => kind === "WAVE_COMPLETED").length,
    );
    expect(between("stage:council", "stage:critics")).toEqual(["COUNCIL_DECISION_MADE", "VOICE_RENDERED"]);
    expect(between("stage:critics", "stage:memory_commit")).toEqual(["CRITICS_UPDATED"]);
    expect(labels.slice(labels.indexOf("stage:memory_commit") + 1)).toEqual(["MEMORY_COMMITTED", "TURN_COMPLETED"]);
  });

  it("runs the always-on wave first, then the scored wave, with every agent answering once", async () => {
    const { records } = await runLocalTurn("I'm feeling really sad and overwhelmed");
    const waves = records.filter((record) => record.kind === "WAVE_STARTED").map((record) => record.payload.agents);
    expect(waves[0]).toEqual(["inhibition.censor", "monitoring.trigger_watcher", "monitoring.anomaly_detector"]);
    expect(waves[1]).toEqual(expect.arrayContaining(["emotion.stress", "emotion.wellbeing"]));
    const answered = records
      .filter((record) => record.kind === "AGENT_COMPLETED")
      .map((record) => record.payload.agent_id);
    expect(answered.sort()).toEqual(waves.flat().sort());
  });
});

describe("turn machine: safety early exit", () => {
  it("skips the cognitive stages and lets the safety council answer", async () => {
    const { records, output } = await runLocalTurn("I want to hurt myself");
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
    const { records, output } = await runLocalTurn("I want to kill myself", {
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
          output: { claims: [], supports: [], opposes: [], proposals: [], stance_delta: {} },
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
    expect(waveZero?.payload).toEqual({ wave: 0, results: 2, failed: 1 });
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
                output: { claims: [], supports: [], opposes: [], proposals: [], stance_delta: {} },
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
});

describe("turn machine: deliberation and council", () => {
  it("deliberates at most the policy's rounds when consensus stays low", async () => {
    const { records } = await runLocalTurn("hello", {
      deliberate: async ({ workspace }) => ({ workspace, consensus: 0.4 }),
    });
    expect(
      records.filter((record) => record.kind === "DELIB_ROUND_STARTED").map((record) => record.payload.round),
    ).toEqual([0, 1, 2]);
  });

  it("stops deliberating as soon as consensus reaches 0.9", async () => {
    let calls = 0;
    const { records } = await runLocalTurn("hello", {
      deliberate: async ({ workspace }) => ({ workspace, consensus: ++calls === 2 ? 0.92 : 0.5 }),
    });
    expect(records.filter((record) => record.kind === "DELIB_ROUND_STARTED")).toHaveLength(2);
    expect(
      records.filter((record) => record.kind === "CONSENSUS_UPDATED").map((record) => record.payload.level),
    ).toEqual([0.5, 0.92]);
  });

  it("renders no reply when the council decides not to speak", async () => {
    const { records, output } = await runLocalTurn("hello", {
      decide: async () => ({
        speak: false,
        urgency: "low",
        speech_act: { intent: "listen", key_points: [], do_not: [] },
        thinking: "nothing to add",
      }),
    });
    expect(records.some((record) => record.kind === "VOICE_RENDERED")).toBe(false);
    expect(output.response).toBe("");
    expect(output.outcome.status).toBe("Complete");
  });
});
