import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { STAGES } from "../../src/contracts/turn.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { stagesOf } from "../helpers/turns.ts";

const nats = useNatsServer();
let model: OpenAIServer;
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({
    CONCLAVE_LLM_BASE_URL: model.url,
    CONCLAVE_LLM_MODEL: "scripted-model",
    CONCLAVE_LLM_MAX_RETRIES: "2",
  }),
);

beforeAll(async () => {
  model = await startOpenAIServer(conclaveModel({ coherenceFailsFirst: true, rateLimitFirst: true }));
  await Promise.all([
    processes.spawn("agents-a", ["worker", "--agents", "inhibition.*,monitoring.*,reasoning.*"]),
    processes.spawn("agents-b", ["worker", "--agents", "emotion.*,social.*,planning.*"]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
  ]);
  await processes.spawn("runner", ["runner"]);
});
afterAll(async () => {
  await model?.stop();
});

describe("a turn in LLM mode across worker processes", () => {
  const events: EngineEvent[] = [];
  beforeAll(async () => {
    const nc = await nats.connect("client");
    const ack = await submitTurn(nc, "llm", { text: "I'm stressed about my deadline tomorrow" });
    await watchTurn(nc, ack, (event) => events.push(event), 30_000);
  });

  it("runs every stage, with the agents answering through the model", () => {
    expect(stagesOf(events)).toEqual([...STAGES]);
    const agents = events.flatMap((event) => (event.kind === "AGENT_COMPLETED" ? [event.payload] : []));
    expect(agents.length).toBeGreaterThanOrEqual(4);
    for (const agent of agents) expect(agent.contribution.claims[0]?.text).toBe(`${agent.agent_id} sees stress.`);
    const structured = model.requests.filter(
      (request) => request.response_format?.json_schema?.name === "agent_output",
    );
    expect(structured.length).toBeGreaterThanOrEqual(agents.length);
  });

  it("takes the council's decision from the model and streams the voice, reasoning on the thinking stream", () => {
    const decision = events.find((event) => event.kind === "COUNCIL_DECISION_MADE");
    expect(decision?.payload).toMatchObject({ intent: "support", do_not: ["lecture the user"] });
    const thinking = events
      .flatMap((event) =>
        event.kind === "STREAM_CHUNK" && event.payload.stream_id === "thinking" ? [event.payload.delta] : [],
      )
      .join("");
    expect(thinking).toContain("keep it short and kind");
    expect(events.filter((event) => event.kind === "STREAM_START").length).toBeGreaterThanOrEqual(2);
  });

  it("re-renders after the coherence critic's feedback, which reaches the model", () => {
    const verdicts = events.flatMap((event) =>
      event.kind === "CRITICS_UPDATED" ? [[event.payload.attempt, event.payload.passed]] : [],
    );
    expect(verdicts).toEqual([
      [1, false],
      [2, true],
    ]);
    const retry = model.requests.filter((request) => request.stream).at(-1);
    expect(retry?.messages[0]?.content).toContain("Acknowledge the stress before any plan.");
    const completed = events.at(-1);
    expect(completed?.kind).toBe("TURN_COMPLETED");
    if (completed?.kind === "TURN_COMPLETED") {
      expect(completed.payload.response).toBe("That sounds hard. Let's take one small step together.");
      expect(completed.payload.outcome).toEqual({ status: "Complete" });
    }
  });

  it("counts tokens per agent and per turn in the cost summary", () => {
    const completed = events.at(-1);
    if (completed?.kind !== "TURN_COMPLETED") throw new Error("turn did not complete");
    const { usage } = completed.payload;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(Object.keys(usage.by_actor)).toEqual(
      expect.arrayContaining(["council", "voice", "critic:coherence", "agent:inhibition.censor"]),
    );
    const sum = Object.values(usage.by_actor).reduce((total, used) => total + used.prompt_tokens, 0);
    expect(usage.prompt_tokens).toBe(sum);
  });

  it("survived the model's first answer being a 429", () => {
    expect(model.requests.length).toBeGreaterThan(1);
  });
});
