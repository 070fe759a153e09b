/**
 * Skills given whatever a message routes to, end to end over a real nats-server. Activated from
 * the client: a skill the message does not route to, activated for the session (client API and
 * CLI), is given to the session's agents from its next turn (AGENT_COMPLETED.skills names it),
 * until it is deactivated or an agent completes it; `getActive` names it `client` with who asked.
 * Declared in a recipe: the recipe's and its node's skills are given to the node's agent, and
 * NODE_COMPLETED.skills names them.
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
const WRITER = "acme.skill_writer";
let client: ConclaveClient;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "conclave-skill-activation-"));
  // Neither routes by itself: `user` skills load only when the message names them.
  writeFileSync(
    join(dir, "summary.yaml"),
    "id: summary\nname: Summary\ndescription: d\nload_strategy: user\ninstructions: Summarise the message.\n",
  );
  writeFileSync(
    join(dir, "report.yaml"),
    "id: report\nname: Report\ndescription: d\nload_strategy: user\ninstructions: Write the report.\n",
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

async function turn(session: string, text: string): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, text)) events.push(event);
  return events;
}

/** The skills the writer agent was given in a turn, as its AGENT_COMPLETED names them. */
function writerSkills(events: EngineEvent[]): string[] | undefined {
  const done = events.find((event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === WRITER);
  return done?.kind === "AGENT_COMPLETED" ? done.payload.skills : undefined;
}

describe("a skill activated for a session from the client", () => {
  it("is given to the next turn's agents though the message does not route to it, until deactivated", async () => {
    const session = "activated-from-client";
    expect(writerSkills(await turn(session, "hello there"))).toEqual([]);
    expect(await client.skills.activate(session, "report")).toEqual({ skill: "report", active: true, changed: true });
    expect(await client.skills.activate(session, "report")).toEqual({
      skill: "report",
      active: true,
      changed: false,
    });
    const active = await client.skills.getActive(session);
    expect(active[0]).toMatchObject({ skill: "report", via: "client", by: "user" });
    expect(writerSkills(await turn(session, "hello again"))).toEqual(["report"]);
    expect(writerSkills(await turn(session, "and once more"))).toEqual(["report"]);

    expect(await client.skills.deactivate(session, "report")).toEqual({
      skill: "report",
      active: false,
      changed: true,
    });
    expect(writerSkills(await turn(session, "hello after"))).toEqual([]);
    expect((await client.skills.getActive(session)).some((entry) => entry.via === "client")).toBe(false);
  });

  it("ends when an agent completes the skill", async () => {
    const session = "activated-then-completed";
    await client.skills.activate(session, "summary");
    const events = await turn(session, "summarize: the cutover is on Monday");
    expect(writerSkills(events)).toEqual(["summary"]);
    expect(events.find((event) => event.kind === "SKILL_COMPLETED")?.payload).toMatchObject({
      skill: "summary",
      ok: true,
    });
    expect((await client.skills.getActive(session)).filter((entry) => entry.via === "client")).toEqual([]);
    expect(writerSkills(await turn(session, "hello after that"))).toEqual([]);
  });

  it("goes on when no worker has the skill", async () => {
    const session = "activated-ghost";
    await client.skills.activate(session, "ghost");
    const events = await turn(session, "hello ghost");
    expect(events.at(-1)?.kind).toBe("TURN_COMPLETED");
    expect(writerSkills(events)).toEqual([]);
  });

  it("refuses a bad skill id or session id in one line, before anything is sent", async () => {
    await expect(client.skills.activate("a session", "report")).rejects.toThrow(/session/);
    await expect(client.skills.activate("ok-session", "Report Writer")).rejects.toThrow(
      /^bad skill id "Report Writer": a skill id is lowercase/,
    );
  });

  it("is activated and deactivated with conclave skills activate|deactivate", async () => {
    const session = "activated-from-cli";
    const on = await runConclave(nats.url, ["skills", "activate", session, "report"]);
    expect(on.code).toBe(0);
    expect(on.stdout.trim()).toBe(`skill report in session ${session}: activated: its next turn's agents are given it`);
    const listed = await runConclave(nats.url, ["skills", "active", "--session", session]);
    expect(listed.stdout).toMatch(/^report\s+client \(by user, /);
    expect(writerSkills(await turn(session, "hello cli"))).toEqual(["report"]);
    const off = await runConclave(nats.url, ["skills", "deactivate", session, "report", "--json"]);
    expect(JSON.parse(off.stdout)).toEqual({ session_id: session, skill: "report", active: false, changed: true });
    const bad = await runConclave(nats.url, ["skills", "activate", session, "Bad Id"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toContain('bad skill id "Bad Id"');
  });
});

/** A workflow recipe whose `write` step's agent is the writer, with the recipe's and the step's skills. */
const skilledRecipe = (skills: Record<string, unknown>, step: Record<string, unknown>) => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "skills-declared" },
  ...skills,
  definitions: { writer: { type: "agent", id: WRITER } },
  workflow: { start: "write", steps: { write: { type: "agent", agent: "writer", ...step } } },
});

/** The skills NODE_COMPLETED names for `node` in the run's turn. */
async function nodeSkills(session: string, turnId: number, node: string): Promise<string[] | undefined> {
  for await (const { event } of client.events(session, { turnId }))
    if (event.kind === "NODE_COMPLETED" && event.payload.node === node) return event.payload.skills;
  return undefined;
}

describe("skills declared in a recipe", () => {
  it("gives the node's agent the recipe's and the node's skills, and NODE_COMPLETED names them", async () => {
    const session = "recipe-declared";
    const run = await client.run(session, skilledRecipe({ skills: ["report"] }, { skills: ["summary"] }), {
      inputs: { request: "hello recipe" },
    });
    expect(run.status === "completed" && run.outcome).toEqual({ status: "Complete" });
    expect(await nodeSkills(session, run.turnId, "write")).toEqual(["report", "summary"]);
    // Only that run's: the session has nothing activated.
    expect((await client.skills.getActive(session)).some((entry) => entry.via === "client")).toBe(false);
  });

  it("gives a run's agents the skills activated for the session too; a skill no worker has is left out", async () => {
    const session = "recipe-and-client";
    await client.skills.activate(session, "report");
    const run = await client.run(session, skilledRecipe({ skills: ["ghost-skill"] }, {}), {
      inputs: { request: "hello again" },
    });
    expect(run.status === "completed" && run.outcome).toEqual({ status: "Complete" });
    expect(await nodeSkills(session, run.turnId, "write")).toEqual(["report"]);
  });
});
