import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, type ReplyHandler, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { liveness } from "./hostileHelpers.ts";

/**
 * A model having a bad day: every agent answer is JSON that fails the agent's
 * schema in several places at once (zod's error for it is many lines). Each
 * agent's failure is a typed `agent_failed` warning with a one-line message;
 * the turn completes, and no worker ends.
 */
const nats = useNatsServer();
let model: OpenAIServer;
let stack: ConclaveProcess[] = [];
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "bad-day", CONCLAVE_LLM_MAX_RETRIES: "0" }),
);

/** Agents get nonsense; the council, critics and voice answer as a cooperative model would. */
const badAgents = (): ReplyHandler => {
  const good = conclaveModel();
  return (body, index) =>
    body.response_format?.json_schema?.name === "agent_output"
      ? { content: JSON.stringify({ claims: "all of them", supports: 3, stance_delta: { warmth: "very" } }) }
      : good(body, index);
};

beforeAll(async () => {
  model = await startOpenAIServer(badAgents());
  stack = await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "*"]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
  ]);
  stack.push(await processes.spawn("runner", ["runner"]));
});
afterAll(async () => {
  await model?.stop();
});

describe("a model answering agents with JSON that fails their schema", () => {
  it("turns each agent's answer into a one-line agent_failed warning; the turn completes and no worker ends", async () => {
    const before = liveness(stack);
    const client = await nats.connect("client");
    const events: EngineEvent[] = [];
    for (let turn = 0; turn < 2; turn++) {
      const ack = await submitTurn(client, "bad-model", { text: "I'm stressed about my deadline tomorrow" });
      const completed = await watchTurn(client, ack, (event) => events.push(event), 60_000);
      expect(completed.payload.outcome.status).toBe("PartialSuccess");
      const warnings = completed.payload.outcome.status === "PartialSuccess" ? completed.payload.outcome.warnings : [];
      const agentWarnings = warnings.filter((warning) => warning.code === "agent_failed");
      expect(agentWarnings.length).toBeGreaterThan(0);
      for (const warning of agentWarnings) {
        expect(warning.message).not.toMatch(/[\r\n]/);
        expect(warning.message.length).toBeLessThanOrEqual(2_000);
      }
    }
    const failed = events.flatMap((event) => (event.kind === "AGENT_FAILED" ? [event.payload] : []));
    expect(failed.length).toBeGreaterThan(0);
    for (const failure of failed) {
      expect(failure.code).toBe("agent_failed");
      expect(failure.message).not.toMatch(/[\r\n]/);
    }
    expect(liveness(stack)).toEqual(before);
  });
});
