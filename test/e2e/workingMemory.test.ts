/**
 * Working memory (issue 39, item 3), on a real nats-server with the runner
 * as a process: a pipeline agent changes the session's working memory in
 * turn 1 through the `update_working_memory` tool (an update the declared
 * schema refuses is refused, with why, and changes nothing), reads it in
 * turn 2, reads it again after the runner process is restarted, and finds
 * it gone once the session is erased, from the log and from the disk.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const SCHEMA = resolve("test/fixtures/workingMemory/schema.json");
const SESSION = "working-memory";
let client: ConclaveClient;
let runner: ConclaveProcess;

const startRunner = () =>
  processes.spawn("runner", ["runner", "--pipeline", "agents"], { CONCLAVE_WORKING_MEMORY_SCHEMA: SCHEMA });

beforeAll(async () => {
  await processes.spawn("agents", ["worker", "--agents", "./test/fixtures/workingMemory/agents.ts"]);
  await processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]);
  runner = await startRunner();
  client = await connect({ nc: await nats.connect("client") });
});

/** Submits a turn; its events, and what notes.keeper answered. */
async function turn(text: string): Promise<{ events: EngineEvent[]; output: Record<string, unknown> }> {
  const submitted = client.submit(SESSION, text);
  const { turn_id: turnId } = await submitted.ack;
  await submitted.result;
  const events = await turnLog(client, SESSION, turnId);
  const answer = events.find((event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === "notes.keeper");
  if (answer?.kind !== "AGENT_COMPLETED") throw new Error(`notes.keeper did not answer in turn ${turnId}`);
  return { events, output: answer.payload.output as Record<string, unknown> };
}

const CANARY = "canary-wm-4e1b7d";
const remembered = { topic: `the launch moved to Friday ${CANARY}`, updates: 1 };

/** Files under `dir` holding `text` (read as bytes), recursively. */
function filesHolding(dir: string, text: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return filesHolding(path, text);
    return readFileSync(path).includes(Buffer.from(text)) ? [path] : [];
  });
}

describe("a session's working memory", () => {
  it("is changed by an agent in turn 1, read in turn 2, kept across a runner restart, erased with the session", async () => {
    const first = await turn(`remember: ${remembered.topic}`);
    expect(first.output.seen).toEqual({ version: 0, memory: {} });
    expect(first.output.updated).toEqual({ version: 1, memory: remembered });
    // The schema refuses a string for `updates`: the agent is told why, and the memory is unchanged.
    expect(first.output.refused).toMatch(/update_working_memory: .*updates.*the working memory is unchanged/);
    const updates = first.events.flatMap((event) => (event.kind === "WORKING_MEMORY_UPDATED" ? [event.payload] : []));
    expect(updates).toEqual([
      expect.objectContaining({
        agent_id: "notes.keeper",
        version: 1,
        changed: ["topic", "updates"],
        memory: remembered,
      }),
    ]);
    const denied = first.events.find((event) => event.kind === "TOOL_CALL_DENIED");
    expect(denied?.kind === "TOOL_CALL_DENIED" && denied.payload).toMatchObject({
      tool: "update_working_memory",
      refusal: "invalid_args",
      rule: "working_memory_schema",
    });

    const second = await turn("what are we doing?");
    expect(second.output.seen).toEqual({ version: 1, memory: remembered });

    await runner.stop();
    runner = await startRunner();
    const third = await turn("and now?");
    expect(third.output.seen).toEqual({ version: 1, memory: remembered });

    const record = await client.workingMemory(SESSION);
    expect(record).toMatchObject({
      session_id: SESSION,
      version: 1,
      memory: remembered,
      turn_id: 1,
      updated_by: "notes.keeper",
    });
    const shown = await runConclave(nats.url, ["session", "memory", SESSION]);
    expect(shown.stdout).toContain("working memory: version 1, last updated in turn 1 by notes.keeper");
    expect(shown.stdout).toContain(`"topic": "${remembered.topic}"`);

    expect(filesHolding(nats.storeDir, CANARY).length).toBeGreaterThan(0);
    await client.erase(SESSION, { requested_by: "test" });
    expect(await client.workingMemory(SESSION)).toEqual({ session_id: SESSION, version: 0, memory: {} });
    // Nothing of it is left on disk: no superseded KV revision ever held it.
    expect(filesHolding(nats.storeDir, CANARY)).toEqual([]);
    // The runner that served the session dropped its copy: the next turn starts from an empty memory.
    const after = await turn("anything left?");
    expect(after.output.seen).toEqual({ version: 0, memory: {} });
  }, 120_000);

  it("refuses a runner whose schema is not an object's, in one line", async () => {
    const bad = await runConclave(nats.url, ["runner"], {
      CONCLAVE_WORKING_MEMORY_SCHEMA: resolve("test/fixtures/workingMemory/agents.ts"),
    });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/CONCLAVE_WORKING_MEMORY_SCHEMA/);
    expect(bad.stderr).not.toMatch(/\n\s+at /);
  });
});
