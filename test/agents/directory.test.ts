import { describe, expect, it } from "vitest";
import { z } from "zod";
import { announceAgents } from "../../src/agents/announcement.ts";
import { defineAgent } from "../../src/agents/defineAgent.ts";
import { AgentDirectory } from "../../src/agents/directory.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { Contribution } from "../../src/contracts/agent.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();

const agent = (name: string) =>
  defineAgent({ name, description: "d", output: z.object({ level: z.number() }), run: () => ({ level: 1 }) }).manifest;

describe("the agent directory", () => {
  it("learns the agents of workers started before it (roll call) and after it (announcement)", async () => {
    const early = await announceAgents(await nats.connect("worker"), "w-early", [agent("dir.early")]);
    const listener = await nats.connect("runner");
    const directory = await AgentDirectory.open(listener);
    expect(directory.roster().map((m) => m.id)).toEqual(["dir.early"]);
    // Announced (and flushed) before anything the directory's connection receives later: seen by then,
    // as the scheduler sees a new worker's agents before the next plan request.
    const late = await announceAgents(await nats.connect("worker"), "w-late", [agent("dir.late")]);
    await listener.flush();
    expect(directory.manifest("dir.late")?.id).toBe("dir.late");
    await late.stop();
    await early.stop();
    directory.close();
  });

  it("forgets a withdrawn worker, and one silent for three heartbeats", async () => {
    let now = 1_000_000;
    const listener = await nats.connect("runner");
    const directory = await AgentDirectory.open(listener, { now: () => now, quietMs: 20 });
    const worker = await nats.connect("worker");
    const gone = await announceAgents(worker, "w-gone", [agent("dir.gone")], 60_000);
    const silent = await announceAgents(worker, "w-silent", [agent("dir.silent")], 1_000);
    await listener.flush();
    await worker.flush();
    await listener.flush();
    expect(
      directory
        .roster()
        .map((m) => m.id)
        .sort(),
    ).toEqual(["dir.gone", "dir.silent"]);
    await gone.stop();
    await listener.flush();
    expect(directory.manifest("dir.gone")).toBeUndefined();
    now += 3_001; // three missed heartbeats of w-silent
    expect(directory.manifest("dir.silent")).toBeUndefined();
    await silent.stop();
    directory.close();
  });

  it("checks answers with the announced JSON Schema, and has none for agents whose output is their contribution", async () => {
    const worker = await nats.connect("worker");
    const custom = await announceAgents(worker, "w-schema", [
      agent("dir.schema"),
      defineAgent({ name: "dir.plain", description: "d", output: Contribution, run: () => ({}) }).manifest,
    ]);
    const directory = await AgentDirectory.open(await nats.connect("runner"));
    expect(directory.outputSchema("dir.schema")?.safeParse({ level: 2 }).success).toBe(true);
    expect(directory.outputSchema("dir.schema")?.safeParse({ level: "high" }).success).toBe(false);
    expect(directory.outputSchema("dir.plain")).toBeUndefined(); // its output is its contribution
    expect(directory.outputSchema("dir.nobody")).toBeUndefined();
    await custom.stop();
    directory.close();
  });

  it("ignores an invalid announcement and says so", async () => {
    const problems: string[] = [];
    const listener = await nats.connect("runner");
    const directory = await AgentDirectory.open(listener, {
      onInvalid: (message) => problems.push(message),
      quietMs: 20,
    });
    const worker = await nats.connect("worker");
    worker.publish(
      subjects.agentsAnnounce,
      JSON.stringify({ worker: "w-bad", agents: [{ id: "Not Valid" }], heartbeat_ms: 5 }),
    );
    await worker.flush();
    await listener.flush();
    expect(problems).toEqual([expect.stringMatching(/agent announcement is invalid/)]);
    expect(directory.roster().some((m) => m.id === "Not Valid")).toBe(false);
    directory.close();
  });
});
