/**
 * The session domain's worker results on a real nats-server, with an in-process runner and
 * workers: results reported from the client and the CLI are events on the session's log, the
 * next turn's agents see them pending, then merged (a conflict named), the ledgers' replay from
 * the log agrees, an agent reports one through `ctx.ledgers`, and a clear takes them away.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import type { WorkerHandle } from "../../src/workers/workerOptions.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";

const nats = useNatsServer();
useInProcessStack(nats);

/** Shows what its context held of the worker results; told "report …", it reports that as a result first. */
const foreman = defineAgent({
  name: "acme.foreman",
  description: "Repeats the worker results the ledgers gave it.",
  priority: "ALWAYS_ON",
  output: z.object({ pending: z.array(z.string()), merged: z.array(z.string()), text: z.string() }),
  run: async ({ memory, input, ledgers }) => {
    const told = /^report (.+)$/i.exec(input.user_message)?.[1];
    if (told) await ledgers.workerResults.record({ worker: "acme.foreman", summary: told });
    return {
      pending: [...(memory.ledgers?.workers?.pending ?? [])],
      merged: [...(memory.ledgers?.workers?.merged ?? [])],
      text: memory.ledgers?.text ?? "",
    };
  },
});

let agents: WorkerHandle;
let client: ConclaveClient;
beforeAll(async () => {
  agents = await startWorker({ nc: await nats.connect("worker"), agents: [foreman] });
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await client?.close();
  await agents?.stop();
});

/** What the foreman's context held in a new turn of `session`. */
async function foremanSees(session: string, message = "how is the work going?") {
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, message)) events.push(event);
  const done = events.find((event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === "acme.foreman");
  if (done?.kind !== "AGENT_COMPLETED") throw new Error("the foreman did not answer");
  return done.payload.output as { pending: string[]; merged: string[]; text: string };
}

const SESSION = "results-1";

describe("worker results", () => {
  it("reach the next turn's agents pending, then merged with the conflict named, and replay from the log", async () => {
    const etl = await client.workerResults.record(SESSION, {
      worker: "etl",
      summary: "loaded the March rows",
      data: { rows: 120, region: "eu" },
    });
    expect(etl).toMatchObject({ worker: "etl", status: "ok", by: "user" });
    // The same report again (a retried request) records nothing new.
    expect(
      await client.workerResults.record(SESSION, {
        worker: "etl",
        summary: "loaded the March rows",
        data: { rows: 120, region: "eu" },
      }),
    ).toEqual(etl);
    const cli = await runConclave(nats.url, [
      "results",
      "record",
      "--session",
      SESSION,
      "--worker",
      "audit",
      "--data",
      '{"rows": 118}',
      "counted the rows again",
    ]);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(/ok {4}audit: counted the rows again {2}data \{"rows":118\}/);

    expect(await foremanSees(SESSION)).toMatchObject({
      pending: ["etl (ok): loaded the March rows", "audit (ok): counted the rows again"],
      merged: [],
    });

    const merged = await runConclave(nats.url, ["results", "merge", "--session", SESSION]);
    expect(merged.code).toBe(0);
    expect(merged.stdout).toContain("conflict on rows: etl, audit (kept audit's)");
    const seen = await foremanSees(SESSION);
    expect(seen.pending).toEqual([]);
    expect(seen.merged).toEqual(["rows = 118", 'region = "eu"']);
    expect(seen.text).toContain("Merged worker results: rows = 118");

    const replay = await client.ledgers.replay(SESSION);
    expect(replay.matches).toBe(true);
    expect(replay.rebuilt.workers.last_merge?.conflicts).toEqual([
      { key: "rows", workers: ["etl", "audit"], kept: "audit" },
    ]);
  });

  it("are reported by agents through ctx.ledgers, recorded as theirs, and cleared with --all", async () => {
    const session = "results-agent";
    await foremanSees(session, "report the scaffolding is up");
    const { pending } = await client.workerResults.list(session);
    expect(pending).toEqual([
      expect.objectContaining({ worker: "acme.foreman", summary: "the scaffolding is up", by: "agent:acme.foreman" }),
    ]);
    await client.workerResults.merge(session);
    const cleared = await runConclave(nats.url, ["results", "clear", "--session", session, "--all", "--json"]);
    expect(cleared.code).toBe(0);
    expect(JSON.parse(cleared.stdout)).toEqual({ pending: [], last_merge: null });
    expect(await foremanSees(session)).toMatchObject({ pending: [], merged: [] });
  });

  it("refuse bad input with one line and store nothing", async () => {
    const bad = await runConclave(nats.url, [
      "results",
      "record",
      "--session",
      "results-bad",
      "--worker",
      "w",
      "--data",
      "[1]",
      "x",
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toContain("--data must be a JSON object");
    await expect(client.workerResults.record("results-bad", { worker: "", summary: "s" })).rejects.toThrow(/worker/);
    expect(await client.workerResults.list("results-bad")).toEqual({ pending: [], last_merge: null });
  });
});
