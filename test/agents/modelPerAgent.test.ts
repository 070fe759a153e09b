/**
 * A model per agent (`defineAgent`'s `model`): agents of one worker reach the
 * model server with their own model names, or another server altogether,
 * through the real `openai` client; the turn's usage counts each agent's own
 * model; a bad choice is refused in one line.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentDefinitionError, defineAgent } from "../../src/agents/defineAgent.ts";
import { AgentDirectory } from "../../src/agents/directory.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { Usage } from "../../src/contracts/model.ts";
import { LlmConfigError } from "../../src/llm/config.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { AgentModels } from "../../src/workers/agentModels.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import type { WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, type ReplyHandler, startOpenAIServer } from "../helpers/openaiServer.ts";

const nats = useNatsServer();

/** What each model reports it used: distinct, so the turn's usage shows whose model answered whom. */
const USAGE: Record<string, Usage> = {
  "default-model": { prompt_tokens: 11, completion_tokens: 3 },
  "special-model": { prompt_tokens: 22, completion_tokens: 5 },
  "remote-model": { prompt_tokens: 33, completion_tokens: 7 },
};

/** Answers each structured request with the model it was sent to, and that model's usage. */
const byModel: ReplyHandler = (body) => ({
  content: JSON.stringify({ note: `answered by ${body.model}` }),
  usage: USAGE[body.model] ?? { prompt_tokens: 1, completion_tokens: 1 },
});

/** An always-on agent that asks its model (when it has one) and says which it got. */
const probe = (name: string, model?: Parameters<typeof defineAgent>[0]["model"]) =>
  defineAgent({
    name,
    description: `asks its model (${name})`,
    priority: "ALWAYS_ON",
    output: z.object({ model: z.string(), note: z.string() }),
    ...(model !== undefined ? { model } : {}),
    async run(ctx) {
      if (!ctx.model) return { model: "offline", note: "no model" };
      const { note } = await ctx.model.structured({
        system: `You are ${name}.`,
        user: ctx.input.user_message,
        schema: z.object({ note: z.string() }),
      });
      return { model: ctx.model.name, note };
    },
  });

let primary: OpenAIServer;
let secondary: OpenAIServer;
const workers: WorkerHandle[] = [];
let runner: Runner;
let client: ConclaveClient;

beforeAll(async () => {
  [primary, secondary] = await Promise.all([startOpenAIServer(byModel), startOpenAIServer(byModel)]);
  const remote = { name: "remote-model", baseUrl: secondary.url };
  workers.push(
    await startWorker({
      nc: await nats.connect("worker"),
      agents: [probe("acme.plain"), probe("acme.special", "special-model"), probe("acme.remote", remote)],
      llm: { baseURL: primary.url, apiKey: "test-key", model: "default-model", timeoutMs: 5_000, maxRetries: 0 },
    }),
    await startWorker({
      nc: await nats.connect("worker"),
      agents: [probe("acme.offline_named", "special-model"), probe("acme.offline_remote", remote)],
      llm: false,
      services: ["memory"],
    }),
  );
  runner = await Runner.start(await nats.connect("runner"), { hostCognition: true });
  client = await connect({ nc: await nats.connect("client") });
});

afterAll(async () => {
  await client?.close();
  await runner?.stop();
  await Promise.all(workers.map((worker) => worker.stop()));
  await Promise.all([primary?.stop(), secondary?.stop()]);
});

describe("an agent's own model", () => {
  const events: EngineEvent[] = [];
  const outputs = new Map<string, unknown>();
  let usage: Record<string, Usage> = {};
  beforeAll(async () => {
    const turn = client.submit("models-1", "Which model are you?");
    for await (const event of turn) events.push(event);
    const result = await turn.result;
    usage = result.usage.by_actor;
    for (const event of events)
      if (event.kind === "AGENT_COMPLETED") outputs.set(event.payload.agent_id, event.payload.output);
  });

  it("reaches the worker's server with the agent's model name, the others with the worker's", () => {
    expect(outputs.get("acme.plain")).toEqual({ model: "default-model", note: "answered by default-model" });
    expect(outputs.get("acme.special")).toEqual({ model: "special-model", note: "answered by special-model" });
    const asked = primary.requests.map((request) => [
      /You are ([a-z._]+)\./.exec(request.messages[0]!.content ?? "")?.[1],
      request.model,
    ]);
    expect(asked).toEqual(
      expect.arrayContaining([
        ["acme.plain", "default-model"],
        ["acme.special", "special-model"],
      ]),
    );
    expect(primary.requests).toHaveLength(2);
  });

  it("reaches a server of its own with its baseUrl, from an LLM worker and from an offline one", () => {
    expect(outputs.get("acme.remote")).toEqual({ model: "remote-model", note: "answered by remote-model" });
    expect(outputs.get("acme.offline_remote")).toEqual({ model: "remote-model", note: "answered by remote-model" });
    expect(secondary.requests.map((request) => request.model)).toEqual(["remote-model", "remote-model"]);
  });

  it("stays offline on an offline worker when it names only a model", () => {
    expect(outputs.get("acme.offline_named")).toEqual({ model: "offline", note: "no model" });
  });

  it("counts each agent's tokens as its own model reported them, naming that model", () => {
    expect(usage["agent:acme.plain"]).toEqual({ ...USAGE["default-model"], model: "default-model" });
    expect(usage["agent:acme.special"]).toEqual({ ...USAGE["special-model"], model: "special-model" });
    expect(usage["agent:acme.remote"]).toEqual({ ...USAGE["remote-model"], model: "remote-model" });
    expect(usage["agent:acme.offline_remote"]).toEqual({ ...USAGE["remote-model"], model: "remote-model" });
    expect(usage["agent:acme.offline_named"]).toBeUndefined();
  });

  it("announces the model the agent asks for in its manifest", async () => {
    const directory = await AgentDirectory.open(await nats.connect("runner"));
    try {
      expect(directory.manifest("acme.special")?.model).toBe("special-model");
      expect(directory.manifest("acme.remote")?.model).toBe("remote-model");
      expect(directory.manifest("acme.plain")?.model).toBeUndefined();
    } finally {
      directory.close();
    }
  });
});

describe("the models of a worker's agents", () => {
  const worker = {
    config: { baseURL: "http://127.0.0.1:9/v1", apiKey: "k", model: "default-model", timeoutMs: 1_000, maxRetries: 0 },
    name: "default-model",
  };

  it("makes one model per server and model name, shared by the agents that name it", () => {
    const models = new AgentModels(worker, {});
    const a = models.for(probe("acme.a", "special-model"));
    const b = models.for(probe("acme.b", { name: "special-model", baseUrl: "http://127.0.0.1:9/v1/" }));
    const c = models.for(probe("acme.c", { name: "special-model", baseUrl: "http://127.0.0.1:10/v1" }));
    expect(a.model).toBe(b.model);
    expect(c.model).not.toBe(a.model);
    expect([a.modelName, c.modelName]).toEqual(["special-model", "special-model"]);
  });

  it("refuses, naming the agent, a server off this machine without a key, or an apiKeyEnv that is not set", () => {
    const models = new AgentModels(worker, {});
    const away = probe("acme.away", { name: "m", baseUrl: "https://models.example.com/v1" });
    expect(() => models.for(away)).toThrow(LlmConfigError);
    expect(() => models.for(away)).toThrow(/^agent 'acme\.away': .*no API key is set: give apiKeyEnv/);
    const named = probe("acme.keyed", { name: "m", baseUrl: "https://models.example.com/v1", apiKeyEnv: "ACME_KEY" });
    expect(() => models.for(named)).toThrow("agent 'acme.keyed': its model's apiKeyEnv ACME_KEY is not set");
    expect(new AgentModels(worker, { ACME_KEY: "secret" }).for(named).modelName).toBe("m");
    expect(new AgentModels(worker, { OPENAI_API_KEY: "secret" }).for(away).modelName).toBe("m");
  });

  it("stops a worker at start when an agent's model cannot be had", async () => {
    const away = probe("acme.away", {
      name: "m",
      baseUrl: "https://models.example.com/v1",
      apiKeyEnv: "ACME_UNSET_KEY",
    });
    await expect(startWorker({ nc: await nats.connect("worker"), agents: [away], llm: false })).rejects.toThrow(
      "its model's apiKeyEnv ACME_UNSET_KEY is not set",
    );
  });
});

describe("a bad model choice", () => {
  const refusal = (model: unknown): string => {
    try {
      probe("acme.bad", model as never);
    } catch (error) {
      expect(error).toBeInstanceOf(AgentDefinitionError);
      return (error as Error).message;
    }
    throw new Error("accepted");
  };

  it("is refused by defineAgent in one line naming the field", () => {
    const cases: [unknown, string][] = [
      ["two words", "agent 'acme.bad': model: must not contain spaces or control characters"],
      ["", "agent 'acme.bad': model: must not be empty"],
      [42, "agent 'acme.bad': model must be a model name or { name, baseUrl?, apiKeyEnv? }"],
      [{ name: "m", baseUrl: "ftp://host/v1" }, "agent 'acme.bad': model.baseUrl: must be an http(s) URL"],
      [{ name: "m", apiKeyEnv: "KEY" }, "agent 'acme.bad': model.apiKeyEnv: needs a baseUrl"],
      [{ name: "m", baseUrl: "http://h/v1", apiKeyEnv: "not a name" }, "agent 'acme.bad': model.apiKeyEnv: must be"],
      [{ baseUrl: "http://h/v1" }, "agent 'acme.bad': model.name:"],
      [{ name: "m", base_url: "http://h/v1" }, "agent 'acme.bad': model: "],
    ];
    for (const [model, message] of cases) {
      const text = refusal(model);
      expect(text.startsWith(message), `${JSON.stringify(model)} → ${text}`).toBe(true);
      expect(text).not.toContain("\n");
    }
  });
});
