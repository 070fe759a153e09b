/**
 * Skills activated from the client, end to end over a real nats-server: a skill the message does
 * not route to, activated for the session (client API and CLI), is given to the session's agents
 * from its next turn (AGENT_COMPLETED.skills names it), until it is deactivated or an agent
 * completes it; `getActive` names it `client` with who asked.
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
