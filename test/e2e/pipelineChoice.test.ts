/**
 * The turn pipeline a user chooses (docs/agents.md): `conclave runner
 * --pipeline agents` runs only the user's own agents and their answer is the
 * reply; a submission's `pipeline` chooses one for its session, stored with
 * it, so it outlives the runner; `recipe:FILE` runs a recipe each turn.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENTS } from "../../agents/index.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { PipelineChoice } from "../../src/contracts/pipeline.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;
const run = promisify(execFile);

beforeAll(async () => {
  await Promise.all([
    processes.spawn("core", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("counter", ["worker", "--agents", "./test/fixtures/pipeline/counter.ts"]),
  ]);
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await client?.close();
});

async function turn(session: string, text: string, pipeline?: PipelineChoice) {
  const result = await client.submit(session, text, {
    timeoutMs: 30_000,
    ...(pipeline ? { pipeline } : {}),
  }).result;
  const events: EngineEvent[] = await turnLog(client, session, result.turnId);
  return { response: result.response, outcome: result.outcome, events };
}

const answered = (events: EngineEvent[]) =>
  events.flatMap((event) => (event.kind === "AGENT_COMPLETED" ? [event.payload.agent_id] : []));

describe("the turn pipeline a user chooses", () => {
  let runner: Awaited<ReturnType<typeof processes.spawn>>;

  it("agents: a single agent's answer, with its tool call, is the reply word for word", async () => {
    runner = await processes.spawn("runner-1", ["runner", "--pipeline", "agents"]);
    const { response, events } = await turn("mine-1", "how many words are in here");
    expect(response).toBe("Your message has 6 words.");
    expect(answered(events)).toEqual(["acme.counter"]);
    expect(events.some((event) => event.kind === "TOOL_CALL_FINISHED")).toBe(true);
    const started = events.find((event) => event.kind === "TURN_STARTED");
    expect(started?.kind === "TURN_STARTED" && started.payload.pipeline).toEqual({
      kind: "agents",
      council: false,
      agents: ["acme.counter"],
    });
    expect(events.filter((event) => event.kind === "TURN_COMPLETED")).toHaveLength(1);
  });

  it("a submission's pipeline overrides the stack's, for its session's later turns too", async () => {
    const first = await turn("builtin-1", "hello there, how are you?", { kind: "cognitive" });
    expect(answered(first.events).some((id) => AGENTS.has(id))).toBe(true);
    const second = await turn("builtin-1", "and again");
    expect(answered(second.events).some((id) => AGENTS.has(id))).toBe(true);
    // A session that chose agents explicitly, for the restart below.
    const chose = await turn("chose-agents", "one two three", { kind: "agents", council: false });
    expect(chose.response).toBe("Your message has 3 words.");
  });

  it("a session's choice survives the runner's restart; the new runner's default holds for the others", async () => {
    await runner.stop(10_000);
    runner = await processes.spawn("runner-2", ["runner"]); // its default: cognitive
    const chose = await turn("chose-agents", "four words right here");
    expect(chose.response).toBe("Your message has 4 words.");
    expect(answered(chose.events)).toEqual(["acme.counter"]);
    const fresh = await turn("fresh-1", "hello there, how are you?");
    expect(answered(fresh.events).some((id) => AGENTS.has(id))).toBe(true);
  });

  it("agents with two agents: the council combines their answers", async () => {
    await processes.spawn("echo", ["worker", "--agents", "./test/fixtures/pipeline/echo.ts"]);
    let result: Awaited<ReturnType<typeof turn>> | undefined;
    // The runner learns of the new worker from its announcement.
    for (let attempt = 0; attempt < 50; attempt++) {
      result = await turn(`two-${attempt}`, "red green blue", { kind: "agents", council: false });
      if (answered(result.events).length === 2) break;
    }
    expect(answered(result!.events).sort()).toEqual(["acme.counter", "acme.echo"]);
    expect(result!.events.some((event) => event.kind === "COUNCIL_DECISION_MADE")).toBe(true);
    expect(result!.response).toContain("Your message has 3 words.");
    expect(result!.response).toContain("You said: red green blue");
  });

  it("recipe:FILE, chosen with conclave send --pipeline, runs the recipe with the message as input", async () => {
    const env = { ...process.env, CONCLAVE_NATS_URL: nats.url };
    const { stdout } = await run(
      process.execPath,
      [
        CONCLAVE_BIN,
        "send",
        "--session",
        "recipe-1",
        "--pipeline",
        "recipe:test/fixtures/pipeline/echo.yaml",
        "hi you",
      ],
      { env },
    );
    expect(stdout).toContain("You said: hi you");
    const next = await turn("recipe-1", "again");
    expect(next.events.some((event) => event.kind === "RECIPE_STARTED")).toBe(true);
    expect(next.response).toContain("You said: again");
  });

  it("a bad --pipeline is a one-line usage error", async () => {
    const env = { ...process.env, CONCLAVE_NATS_URL: nats.url };
    const failed = await run(process.execPath, [CONCLAVE_BIN, "runner", "--pipeline", "mine"], { env }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed).toMatchObject({ code: 2 });
    const stderr = (failed as { stderr: string }).stderr.trim();
    expect(stderr.split("\n")).toHaveLength(1);
    expect(stderr).toMatch(/--pipeline must be cognitive, agents, agents\+council or recipe:FILE, not 'mine'/);
  });
});
