/**
 * Skills in an agent's context: a worker given a skills directory picks, for
 * each agent request, the skills its user message loads; a built-in agent in
 * LLM mode follows their instructions (its system prompt has them under
 * "Skills"), and AGENT_COMPLETED names them.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";
import { requestJson } from "../../src/bus/request.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { AgentReply } from "../../src/contracts/agent.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { neutralModulators, neutralStance, SENSOR_NAMES } from "../../src/contracts/workspace.ts";
import { SkillDefinitionError } from "../../src/skills/definition.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const UMBRELLA = "When rain is forecast, remind the user to carry an umbrella.";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let model: OpenAIServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "conclave-worker-skills-"));
  writeFileSync(
    join(dir, "umbrella.md"),
    [
      "---",
      "id: umbrella",
      "name: Umbrella advice",
      "description: What to say when rain is coming.",
      "load_strategy: lazy",
      "trigger_intent: rain umbrella weather forecast",
      "---",
      UMBRELLA,
      "",
    ].join("\n"),
  );
  writeFileSync(
    join(dir, "tone.yaml"),
    "id: tone\nname: Formal tone\ndescription: Formal answers.\nload_strategy: user\ninstructions: Answer formally.\n",
  );
  model = await startOpenAIServer(conclaveModel());
  // Only the agents' worker thinks with the model; the core actors and the runner stay offline.
  await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "inhibition.censor", "--skills", dir], {
      CONCLAVE_LLM_BASE_URL: model.url,
      CONCLAVE_LLM_MODEL: "scripted-model",
    }),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
  ]);
  await processes.spawn("runner", ["runner"]);
});

afterAll(async () => {
  await model?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a turn; returns its events and the system prompts of the model requests it made. */
async function turn(session: string, text: string): Promise<{ events: EngineEvent[]; systems: string[] }> {
  const nc = await nats.connect("client");
  const before = model.requests.length;
  const events: EngineEvent[] = [];
  await watchTurn(nc, await submitTurn(nc, session, { text }), (event) => events.push(event), 20_000);
  const systems = model.requests.slice(before).map((request) => request.messages[0]?.content ?? "");
  return { events, systems };
}

const censorCompleted = (events: EngineEvent[]) =>
  events.flatMap((event) =>
    event.kind === "AGENT_COMPLETED" && event.payload.agent_id === "inhibition.censor" ? [event.payload] : [],
  );

describe("a worker with --skills", () => {
  it("puts a lazy skill a message is close to in the agent's system prompt, and names it in AGENT_COMPLETED", async () => {
    const { events, systems } = await turn("skills-1", "Will it rain tomorrow? Should I take an umbrella?");
    const [completed] = censorCompleted(events);
    expect(completed?.skills).toEqual(["umbrella"]);
    expect(systems).toHaveLength(1);
    expect(systems[0]).toContain("You are inhibition.censor");
    expect(systems[0]).toContain(
      `## Skills\nFollow these instructions where they apply to this turn.\n\n### Umbrella advice\n${UMBRELLA}`,
    );
    expect(systems[0]).not.toContain("Answer formally.");
  });

  it("loads none for a message unrelated to every skill", async () => {
    const { events, systems } = await turn("skills-2", "I'm stressed about my deadline at work");
    const [completed] = censorCompleted(events);
    expect(completed?.skills).toEqual([]);
    expect(systems).toHaveLength(1);
    expect(systems[0]).not.toContain("## Skills");
    expect(systems[0]).not.toContain(UMBRELLA);
  });

  it("stops at start, in one line naming the file, on a bad skills directory", async () => {
    const bad = mkdtempSync(join(tmpdir(), "conclave-bad-skills-"));
    try {
      writeFileSync(
        join(bad, "broken.yaml"),
        "id: broken\nname: Broken\ndescription: x\nload_strategy: lazy\ninstructions: y\n",
      );
      const run = promisify(execFile)(
        process.execPath,
        [CONCLAVE_BIN, "worker", "--agents", "inhibition.censor", "--skills", bad],
        {
          env: { ...process.env, CONCLAVE_NATS_URL: nats.url },
        },
      );
      const failed = await run.then(
        () => null,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failed?.code).not.toBe(0);
      const lines = failed!.stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/broken\.yaml: trigger_intent: a lazy skill needs a trigger_intent/);
    } finally {
      rmSync(bad, { recursive: true, force: true });
    }
  });
});

describe("ctx.skills of an agent of one's own", () => {
  const reader = defineAgent({
    name: "acme.reader",
    description: "Says which skills it was given.",
    output: z.object({ given: z.array(z.object({ id: z.string(), name: z.string(), instructions: z.string() })) }),
    run: (ctx) => ({ given: [...ctx.skills] }),
  });

  it("holds the loaded skills' ids, names and instructions, user ones when the message names them", async () => {
    const worker = await startWorker({
      nc: await nats.connect("worker"),
      agents: [reader],
      llm: false,
      skills: { dir },
    });
    try {
      const nc = await nats.connect("runner");
      let turnId = 0;
      // A new turn each: the worker answers a pipeline step asked again (same session, turn, wave) with its first reply.
      const ask = (text: string) =>
        requestJson(
          nc,
          subjects.agent("acme.reader"),
          {
            session_id: "reader",
            turn_id: ++turnId,
            agent_id: "acme.reader",
            wave: 0,
            timeout_ms: 5_000,
            context: {
              user_message: text,
              sensors: Object.fromEntries(SENSOR_NAMES.map((name) => [name, 0])),
              modulators: neutralModulators(),
              stance: neutralStance(),
              claims: [],
              episodes: [],
            },
          },
          AgentReply,
          { timeoutMs: 10_000 },
        );
      const rainy = await ask("rain and an umbrella, /tone please");
      expect(rainy.skills).toEqual(["umbrella", "tone"]);
      expect(rainy.output).toEqual({
        given: [
          { id: "umbrella", name: "Umbrella advice", instructions: UMBRELLA },
          { id: "tone", name: "Formal tone", instructions: "Answer formally." },
        ],
      });
      expect((await ask("hello there")).skills).toEqual([]);
    } finally {
      await worker.stop();
    }
  });

  it("refuses a bad directory when the worker starts", async () => {
    await expect(
      startWorker({
        nc: await nats.connect("worker"),
        agents: [reader],
        llm: false,
        skills: { dir: join(dir, "missing") },
      }),
    ).rejects.toThrow(SkillDefinitionError);
  });
});
