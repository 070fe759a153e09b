import { describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { CRITIC_NAMES } from "../../src/cognition/critics.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { STAGES } from "../../src/contracts/turn.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { stagesOf } from "../helpers/turns.ts";

const nats = useNatsServer();

async function turnWith(
  workerSetup: Omit<Parameters<typeof startWorker>[0], "nc"> | null,
  session: string,
  text: string,
) {
  const worker = workerSetup ? await startWorker({ nc: await nats.connect("worker"), ...workerSetup }) : null;
  const runner = await Runner.start(await nats.connect("runner"));
  try {
    const nc = await nats.connect("client");
    const events: EngineEvent[] = [];
    const completed = await watchTurn(
      nc,
      await submitTurn(nc, session, { text }),
      (event) => events.push(event),
      20_000,
    );
    return { events, completed };
  } finally {
    await runner.stop();
    await worker?.stop();
  }
}

describe("a stage whose worker is absent", () => {
  it("ends the turn as PartialSuccess with a warning per missing service, not a hang", async () => {
    const { events, completed } = await turnWith(
      { agents: builtinAgents("*"), services: [] },
      "absent-core",
      "hello, how are you?",
    );
    expect(stagesOf(events)).toEqual([...STAGES]);
    const outcome = completed.payload.outcome;
    expect(outcome.status).toBe("PartialSuccess");
    if (outcome.status !== "PartialSuccess") return;
    expect(outcome.warnings.map((warning) => [warning.stage, warning.code, warning.subject])).toEqual([
      ["context", "no_responders", "memory"],
      ["agents", "no_responders", "scheduler"],
      // No council worker: the runner's deterministic council and voice answer in their place.
      ["council", "council_fallback", "council"],
      ["council", "voice_fallback", "voice"],
      ...CRITIC_NAMES.map((critic) => ["critics", "no_responders", `critic:${critic}`]),
      ["memory_commit", "no_responders", "memory"],
    ]);
    expect(completed.payload.response).not.toBe("");
    expect(events.filter((event) => event.kind === "STAGE_WARNING")).toHaveLength(5 + CRITIC_NAMES.length);
  });

  it("names an agent whose worker died after announcing it, while the other agents answer", async () => {
    const worker = await startWorker({
      nc: await nats.connect("worker"),
      agents: builtinAgents("monitoring.*,emotion.*,reasoning.*,social.*,planning.*,inhibition.overclaim"),
      services: ["scheduler", "council", "critics", "memory"],
    });
    const runner = await Runner.start(await nats.connect("runner"));
    // The censor's worker announces it to the running scheduler, then its connection drops without withdrawing
    // it (a crash): the roster lists it until three heartbeats pass, so it is scheduled and its call finds no one.
    const doomed = await nats.connect("worker");
    await startWorker({ nc: doomed, agents: builtinAgents("inhibition.censor") });
    await doomed.close();
    try {
      const nc = await nats.connect("client");
      const events: EngineEvent[] = [];
      const completed = await watchTurn(
        nc,
        await submitTurn(nc, "absent-agent", { text: "I'm feeling stressed" }),
        (event) => events.push(event),
        20_000,
      );
      const failed = events.flatMap((event) => (event.kind === "AGENT_FAILED" ? [event.payload] : []));
      expect(failed).toEqual([expect.objectContaining({ agent_id: "inhibition.censor", code: "no_responders" })]);
      expect(events.filter((event) => event.kind === "AGENT_COMPLETED").length).toBeGreaterThanOrEqual(3);
      expect(completed.payload.outcome).toMatchObject({
        status: "PartialSuccess",
        warnings: [{ stage: "agents", code: "no_responders", subject: "inhibition.censor" }],
      });
      expect(completed.payload.response.length).toBeGreaterThan(0);
    } finally {
      await runner.stop();
      await worker.stop();
    }
  });

  it("does not schedule an agent no live worker hosts", async () => {
    const { events, completed } = await turnWith(
      {
        agents: builtinAgents("monitoring.*,emotion.*,reasoning.*,social.*,planning.*,inhibition.overclaim"),
        services: ["scheduler", "council", "critics", "memory"],
      },
      "unhosted-agent",
      "I'm feeling stressed",
    );
    const planned = events.find((event) => event.kind === "SCHEDULE_PLANNED");
    expect(planned?.kind === "SCHEDULE_PLANNED" && planned.payload.waves.flat()).not.toContain("inhibition.censor");
    expect(planned?.kind === "SCHEDULE_PLANNED" && planned.payload.waves.flat()).toContain("inhibition.overclaim");
    expect(events.filter((event) => event.kind === "AGENT_FAILED")).toEqual([]);
    expect(completed.payload.outcome.status).toBe("Complete");
  });

  it("completes even with no worker at all", async () => {
    const { events, completed } = await turnWith(null, "absent-all", "anyone?");
    expect(stagesOf(events)).toEqual([...STAGES]);
    expect(completed.payload.outcome.status).toBe("PartialSuccess");
  });
});
