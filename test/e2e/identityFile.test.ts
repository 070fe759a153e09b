/**
 * An identity file per agent, in LLM mode (the suite's OpenAI-compatible server, through the real
 * `openai` client), on a real nats-server with an in-process runner and workers: the worker hosting
 * an agent puts the agent's `identity.md` first in its planned context, so the model is shown it;
 * AGENT_COMPLETED names the file and its hash, never its text; an agent without a file gets none,
 * and an edit reaches the next turn.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { IDENTITY_FILE } from "../../src/agents/identityFile.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";

const nats = useNatsServer();
const identities = mkdtempSync(join(tmpdir(), "conclave-identities-"));
const ANALYST = "reasoning.skeptic";
const writeIdentity = (text: string) => {
  mkdirSync(join(identities, ANALYST), { recursive: true });
  writeFileSync(join(identities, ANALYST, IDENTITY_FILE), text);
};

let model: OpenAIServer;
let agents: WorkerHandle;
let core: WorkerHandle;
let runner: Runner;
let client: ConclaveClient;

beforeAll(async () => {
  writeIdentity("You are Orla, the analyst. You never guess a number you were not given.");
  model = await startOpenAIServer(conclaveModel());
  const llm = { baseURL: model.url, apiKey: "k", model: "scripted", timeoutMs: 10_000, maxRetries: 0 };
  agents = await startWorker({
    nc: await nats.connect("worker"),
    agents: builtinAgents("reasoning.*"),
    llm,
    identityDir: identities,
  });
  core = await startWorker({ nc: await nats.connect("worker"), agents: [], services: [...CORE_SERVICES], llm: false });
  runner = await Runner.start(await nats.connect("runner"));
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await client?.close();
  await runner?.stop();
  await Promise.allSettled([agents?.stop(), core?.stop()]);
  await model?.stop();
});

/** A turn's events, and the user prompts the model was sent for each agent in it. */
async function turn(session: string): Promise<{ events: EngineEvent[]; prompts: Map<string, string> }> {
  const before = model.requests.length;
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, "How much should I save each month?")) events.push(event);
  const prompts = new Map<string, string>();
  for (const body of model.requests.slice(before)) {
    const system = String(body.messages.find((message) => message.role === "system")?.content ?? "");
    const agent = /You are ([a-z_]+\.[a-z_]+), one agent/.exec(system)?.[1];
    const user = body.messages.find((message) => message.role === "user")?.content;
    if (agent && typeof user === "string" && !prompts.has(agent)) prompts.set(agent, user);
  }
  return { events, prompts };
}

const completed = (events: EngineEvent[], agent: string) =>
  events.find((event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === agent);

describe("an identity file per agent", () => {
  it("is shown to the agent's model first in its identity zone, and AGENT_COMPLETED names it by hash", async () => {
    const { events, prompts } = await turn("identity-1");
    const analyst = prompts.get(ANALYST);
    expect(analyst).toMatch(
      /^## Identity and persona\n- You are Orla, the analyst\. You never guess a number you were not given\./,
    );
    // Other agents of the same worker have no file: nothing of it in theirs.
    const others = [...prompts].filter(([agent]) => agent !== ANALYST);
    expect(others.length).toBeGreaterThan(0);
    for (const [, prompt] of others) expect(prompt).not.toContain("Orla");
    const done = completed(events, ANALYST);
    expect(done?.kind === "AGENT_COMPLETED" && done.payload.identity).toEqual({
      path: join(identities, ANALYST, IDENTITY_FILE),
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    // The log keeps the hash, not the text.
    expect(JSON.stringify(events)).not.toContain("Orla");
  });

  it("is read again after an edit, for the next turn", async () => {
    const first = completed((await turn("identity-2")).events, ANALYST);
    writeIdentity("You are Orla, the analyst. Answer in euros.");
    const { events, prompts } = await turn("identity-2");
    expect(prompts.get(ANALYST)).toContain("Answer in euros.");
    const second = completed(events, ANALYST);
    expect(second?.kind === "AGENT_COMPLETED" && second.payload.identity?.sha256).not.toBe(
      first?.kind === "AGENT_COMPLETED" && first.payload.identity?.sha256,
    );
  });
});
