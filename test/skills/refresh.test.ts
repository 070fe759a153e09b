/**
 * Skills refresh (issue 38 item 7): a client asks, a runner relays to every
 * worker with skills, each re-reads its directory and reports what it added,
 * removed and changed; its next agent request routes over the new skills. A
 * bad skill file is one line, and the worker keeps its skills. Real
 * nats-server, a real runner process, an in-process worker, and the CLI.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";
import { requestJson } from "../../src/bus/request.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { AgentReply } from "../../src/contracts/agent.ts";
import { neutralModulators, neutralStance, SENSOR_NAMES } from "../../src/contracts/workspace.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import type { WorkerHandle } from "../../src/workers/workerOptions.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const dir = mkdtempSync(join(tmpdir(), "conclave-skills-refresh-"));
let worker: WorkerHandle;
let client: ConclaveClient;

const skill = (id: string, instructions: string) =>
  `id: ${id}\nname: ${id}\ndescription: d\nload_strategy: eager\ninstructions: ${instructions}\n`;

const reader = defineAgent({
  name: "acme.reader",
  description: "Says which skills it was given.",
  output: z.object({ given: z.array(z.string()) }),
  run: (ctx) => ({ given: ctx.skills.map((given) => given.id) }),
});

beforeAll(async () => {
  writeFileSync(join(dir, "tone.yaml"), skill("tone", "Answer formally."));
  writeFileSync(join(dir, "old.yaml"), skill("old", "Soon gone."));
  worker = await startWorker({ nc: await nats.connect("worker"), agents: [reader], llm: false, skills: { dir } });
  await processes.spawn("runner", ["runner"]);
  client = await connect({ nc: await nats.connect("client") });
}, 120_000);

afterAll(async () => {
  await client?.close();
  await worker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

let turnId = 0;
/** The skills the worker gives its agent for a message (a new turn each: a step asked again is answered once). */
async function skillsGiven(): Promise<string[]> {
  const reply = await requestJson(
    await nats.connect("runner"),
    subjects.agent("acme.reader"),
    {
      session_id: "refresh",
      turn_id: ++turnId,
      agent_id: "acme.reader",
      wave: 0,
      timeout_ms: 5_000,
      context: {
        user_message: "hello",
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
  return (reply.output as { given: string[] }).given;
}

describe("skills refresh", () => {
  it("reports what each worker added, removed and changed, and its agents get the new skills", async () => {
    expect(await skillsGiven()).toEqual(["old", "tone"]);
    writeFileSync(join(dir, "tone.yaml"), skill("tone", "Answer very formally."));
    writeFileSync(join(dir, "greet.yaml"), skill("greet", "Say hello first."));
    rmSync(join(dir, "old.yaml"));

    const reply = await client.skills.refresh();
    expect(reply.workers).toHaveLength(1);
    expect(reply.workers[0]).toMatchObject({ dir, added: ["greet"], removed: ["old"], changed: ["tone"] });
    expect(reply.workers[0]?.error).toBeUndefined();
    expect(await skillsGiven()).toEqual(["greet", "tone"]);

    // Nothing changed since: an empty report.
    expect((await client.skills.refresh()).workers[0]).toMatchObject({ added: [], removed: [], changed: [] });
  });

  it("a bad skill file is one line, and the worker keeps the skills it had", async () => {
    const before = await skillsGiven();
    writeFileSync(
      join(dir, "broken.yaml"),
      "id: broken\nname: B\ndescription: x\nload_strategy: lazy\ninstructions: y\n",
    );
    try {
      const reply = await client.skills.refresh();
      expect(reply.workers[0]?.error).toMatch(/broken\.yaml: .*needs a trigger_intent/);
      expect(reply.workers[0]?.error).not.toContain("\n");
      expect(await skillsGiven()).toEqual(before);

      const cli = await runConclave(nats.url, ["skills", "refresh"]);
      expect(cli.code).toBe(1);
      expect(cli.stdout.trim().split("\n")).toHaveLength(1);
      expect(cli.stdout).toMatch(/: not refreshed, its skills stay as they were: .*broken\.yaml/);
    } finally {
      rmSync(join(dir, "broken.yaml"));
    }
    const cli = await runConclave(nats.url, ["skills", "refresh", "--json"]);
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ workers: [{ added: [], removed: [], changed: [] }] });
  });
});
