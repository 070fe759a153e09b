/**
 * The skill lifecycle end to end: an agent on a worker with --skills completes
 * a skill in a pipeline turn; the runner records SKILL_COMPLETED with the
 * output (or the refusal its output_schema found) on the session's log; the
 * client API and `conclave skills outputs` read the outputs back, and those a
 * second skill consumes.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const SESSION = "skills-lifecycle";
let client: ConclaveClient;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "conclave-skill-lifecycle-"));
  writeFileSync(
    join(dir, "summary.yaml"),
    [
      "id: summary",
      "name: Summary",
      "description: A short summary of the message.",
      "instructions: Summarise the message.",
      "output_schema:",
      "  type: object",
      "  required: [text, words]",
      "  properties:",
      "    text: { type: string }",
      "    words: { type: integer, minimum: 1 }",
      "",
    ].join("\n"),
  );
  writeFileSync(
    join(dir, "report.yaml"),
    "id: report\nname: Report\ndescription: A report from the summaries.\nload_strategy: user\ninstructions: Write the report.\nconsumes: [summary]\n",
  );
  await Promise.all([
    processes.spawn("writer", ["worker", "--agents", "./test/skills/fixtures/skillAgents.ts", "--skills", dir]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("runner", ["runner"]),
  ]);
  client = await connect({ nc: await nats.connect("client") });
});

afterAll(async () => {
  await client?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function turn(text: string): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const event of client.submit(SESSION, text)) events.push(event);
  return events;
}

const kindsOf = (events: EngineEvent[]) => events.map((event) => event.kind);

describe("the skill lifecycle on a session's log", () => {
  it("records a completed skill's output before the agent's AGENT_COMPLETED, and reads it back", async () => {
    const events = await turn("summarize: the cutover is on Monday");
    const completed = events.find((event) => event.kind === "SKILL_COMPLETED");
    expect(completed?.payload).toEqual({
      skill: "summary",
      agent_id: "acme.skill_writer",
      ok: true,
      output: { text: "the cutover is on Monday", words: 5 },
    });
    const kinds = kindsOf(events);
    const agentDone = events.findIndex(
      (event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === "acme.skill_writer",
    );
    expect(kinds.indexOf("SKILL_COMPLETED")).toBeLessThan(agentDone);
    expect(await client.skills.getOutputs(SESSION, "summary")).toEqual([
      {
        skill: "summary",
        output: { text: "the cutover is on Monday", words: 5 },
        turn_id: completed!.turn_id,
        agent_id: "acme.skill_writer",
      },
    ]);
  });

  it("records an output its schema refuses as a refusal, with the issues, and keeps no output of it", async () => {
    const events = await turn("bad summary, then report");
    const refused = events.find((event) => event.kind === "SKILL_COMPLETED");
    expect(refused?.kind === "SKILL_COMPLETED" && refused.payload.ok).toBe(false);
    const issues = refused?.kind === "SKILL_COMPLETED" ? (refused.payload.issues ?? []) : [];
    expect(issues.join("; ")).toMatch(/text/);
    expect(issues.join("; ")).toMatch(/words/);
    expect(refused?.kind === "SKILL_COMPLETED" && "output" in refused.payload).toBe(false);
    expect(events.find((event) => event.kind === "SKILL_ACTIVATED")?.payload).toEqual({
      skill: "report",
      agent_id: "acme.skill_writer",
    });
    expect(await client.skills.getOutputs(SESSION, "summary")).toHaveLength(1);
    // `summary` is eager: the latest turn loaded it into the agent's context.
    expect((await client.skills.getActive(SESSION)).map((active) => [active.skill, active.via])).toEqual([
      ["report", "activated"],
      ["summary", "routed"],
    ]);
  });

  it("records a recipe node's agent's completed skill, with its node", async () => {
    const session = "skills-recipe";
    const run = await client.run(
      session,
      {
        apiVersion: "coreason.ai/v2",
        kind: "Recipe",
        metadata: { name: "skill-in-recipe" },
        definitions: { writer: { type: "agent", id: "acme.skill_writer" } },
        workflow: { start: "write", steps: { write: { type: "agent", agent: "writer" } } },
      },
      { inputs: { request: "summarize: a recipe ran" } },
    );
    expect(run.status === "completed" && run.outcome).toEqual({ status: "Complete" });
    const events: EngineEvent[] = [];
    for await (const { event } of client.events(session, { turnId: run.turnId })) events.push(event);
    const completed = events.find((event) => event.kind === "SKILL_COMPLETED");
    expect(completed?.payload).toEqual({
      skill: "summary",
      agent_id: "acme.skill_writer",
      node: "write",
      ok: true,
      output: { text: "a recipe ran", words: 3 },
    });
    expect((await client.skills.getOutputs(session, "summary")).map((entry) => entry.output)).toEqual([
      { text: "a recipe ran", words: 3 },
    ]);
  });

  it("gives a second skill the outputs of the skills it consumes (client API and CLI)", async () => {
    const consumed = await client.skills.getConsumedOutputs(SESSION, "report", { dir });
    expect(Object.keys(consumed)).toEqual(["summary"]);
    expect(consumed.summary?.map((entry) => entry.output)).toEqual([{ text: "the cutover is on Monday", words: 5 }]);
    await expect(client.skills.getConsumedOutputs(SESSION, "nope", { dir })).rejects.toThrow(/no skill "nope"/);

    const cli = await runConclave(nats.url, ["skills", "outputs", "--session", SESSION, "summary", "--json"]);
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout).map((entry: { output: unknown }) => entry.output)).toEqual([
      { text: "the cutover is on Monday", words: 5 },
    ]);
    const viaConsumed = await runConclave(nats.url, [
      "skills",
      "outputs",
      "--session",
      SESSION,
      "report",
      "--consumed",
      "--dir",
      dir,
    ]);
    expect(viaConsumed.code).toBe(0);
    expect(viaConsumed.stdout).toContain(
      'summary (turn 1, acme.skill_writer): {"text":"the cutover is on Monday","words":5}',
    );
  });
});
