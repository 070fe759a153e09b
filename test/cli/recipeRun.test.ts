/**
 * `conclave run`, `resume` and `trace` as a person runs them: child
 * processes against a runner and a worker hosting the recipes' agents.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { createRunPrinter } from "../../src/cli/commands/run.ts";
import type { EngineEvent, EventBody } from "../../src/contracts/events.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);

beforeAll(async () => {
  await processes.spawn("agents", ["worker", "--agents", "./agents/recipes/index.ts"]);
  await processes.spawn("runner", ["runner"]);
});

async function conclave(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CONCLAVE_BIN, ...args], {
      env: { ...process.env, CONCLAVE_NATS_URL: nats.url, CONCLAVE_LOG: "quiet" },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe("conclave run, resume and trace", () => {
  it("runs a recipe, streaming its nodes, and prints the final blackboard (exit 0)", async () => {
    const { code, stdout } = await conclave([
      "run",
      "recipes/triage.yaml",
      "--session",
      "cli-triage",
      "--input",
      '{"message": "I was charged twice"}',
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain("running recipe 'support-triage' in session cli-triage");
    expect(stdout).toContain("▸ classify (agent)");
    expect(stdout).toContain("→ billing");
    expect(stdout).toMatch(/^ {8}billing:default › I have looked at your account: .*\n/m);
    expect(stdout).toContain('"category": "billing"');
  });

  it("with --json, one event per line and a result line", async () => {
    const { code, stdout } = await conclave([
      "run",
      "recipes/triage.yaml",
      "--json",
      "--input",
      '{"message": "The app crashes"}',
    ]);
    expect(code).toBe(0);
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ kind: "TURN_STARTED" });
    expect(lines.at(-1)).toMatchObject({
      result: {
        status: "completed",
        sessionId: expect.stringMatching(/^run-[0-9a-f]{8}$/),
        turnId: 1,
        outcome: { status: "Complete" },
        output: { message: "The app crashes", triage: { category: "technical" } },
      },
    });
    expect(lines.map((line) => line.kind)).toEqual(
      expect.arrayContaining(["RECIPE_STARTED", "NODE_STARTED", "ROUTE_TAKEN", "STREAM_CHUNK", "TURN_COMPLETED"]),
    );
  });

  it("refuses bad input with one line and exit 2, before anything runs", async () => {
    const notJson = await conclave(["run", "recipes/triage.yaml", "--input", "{nope"]);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr.trim().split("\n")).toHaveLength(1);
    expect(notJson.stderr).toMatch(/--input is not JSON/);
    const wrongType = await conclave(["run", "recipes/triage.yaml", "--input", '{"message": 7}']);
    expect(wrongType.code).toBe(2);
    expect(wrongType.stderr).toMatch(/recipe\.inputs\.message/);
    const missing = await conclave(["run", "recipes/nothing-here.yaml"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read recipes\/nothing-here\.yaml/);
    // Checked here: the file and each issue's path, on one line.
    const invalid = await conclave(["run", "test/fixtures/recipe-cli/missing-field.yaml"]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr.trim().split("\n")).toHaveLength(1);
    expect(invalid.stderr).toMatch(
      /^conclave run: test\/fixtures\/recipe-cli\/missing-field\.yaml: workflow\.steps\.draft\.agent: .*; workflow\.steps\.decide\.cases: /,
    );
    // Refused by the runner, which knows the live agents.
    const dir = mkdtempSync(join(tmpdir(), "conclave-run-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "unknown-agent.yaml");
    writeFileSync(
      file,
      "apiVersion: coreason.ai/v2\nkind: Recipe\nmetadata: { name: lonely }\ntopology:\n  - { type: agent, id: ask, agent_ref: nobody.here }\n",
    );
    const unknown = await conclave(["run", file, "--json"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe("");
    const error = JSON.parse(unknown.stderr) as { error: { code: string; message: string } };
    expect(error.error.message).toMatch(/nobody\.here/);
  });

  it("suspends at a human node (exit 5, how to answer), resumes with the right role, and traces the run", async () => {
    const suspended = await conclave([
      "run",
      "recipes/approval.yaml",
      "--session",
      "cli-approval",
      "--input",
      '{"topic": "our new API"}',
    ]);
    expect(suspended.code).toBe(5);
    expect(suspended.stdout).toContain("suspended at 'approve': Publish this draft?");
    expect(suspended.stdout).toContain("conclave resume 1 --session cli-approval --user-id <you> --role editor");

    const wrongRole = await conclave([
      "resume",
      "1",
      "--session",
      "cli-approval",
      "--user-id",
      "bob",
      "--role",
      "intern",
      "--input",
      '{"approved": true}',
    ]);
    expect(wrongRole.code).toBe(2);
    expect(wrongRole.stderr).toMatch(/role 'editor'/);

    const done = await conclave([
      "resume",
      "1",
      "--session",
      "cli-approval",
      "--user-id",
      "ana",
      "--role",
      "editor",
      "--input",
      '{"approved": true}',
    ]);
    expect(done.code).toBe(0);
    expect(done.stdout).toContain("'approve' answered by ana");
    expect(done.stdout).toContain('"status": "published"');

    const again = await conclave([
      "resume",
      "1",
      "--session",
      "cli-approval",
      "--user-id",
      "ana",
      "--role",
      "editor",
      "--input",
      "true",
    ]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/not waiting/);

    const trace = await conclave(["trace", "1", "--session", "cli-approval", "--json"]);
    expect(trace.code).toBe(0);
    const document = JSON.parse(trace.stdout) as {
      status: string;
      steps: {
        kind: string;
        node: string | null;
        thought: string;
        observation: unknown;
        snapshot: Record<string, unknown>;
      }[];
    };
    expect(document.status).toBe("completed");
    expect(document.steps.some((step) => step.kind.startsWith("STREAM_"))).toBe(false);
    const kinds = document.steps.map((step) => step.kind);
    expect(kinds).toEqual(
      expect.arrayContaining(["HUMAN_INPUT_REQUESTED", "TURN_SUSPENDED", "HUMAN_INPUT_RECEIVED", "TURN_COMPLETED"]),
    );
    const answer = document.steps.find((step) => step.kind === "HUMAN_INPUT_RECEIVED");
    expect(answer).toMatchObject({
      node: "approve",
      thought: "ana answered as editor",
      observation: { approved: true },
      snapshot: { topic: "our new API", draft: { text: expect.any(String) } },
    });
    const last = document.steps.at(-1);
    expect(last?.snapshot).toMatchObject({ approve: { approved: true }, publish: { status: "published" } });
    const readable = await conclave(["trace", "1", "--session", "cli-approval"]);
    expect(readable.stdout).toMatch(/^recipe approval \(completed\)/);
    expect(readable.code).toBe(0);
    expect(readable.stdout).toMatch(/^#\d+ draft {2}call agent content\.writer {2}/m);
    expect(readable.stdout).toMatch(/^#\d+ approve {2}resume with the answer {2}\(ana answered as editor\)/m);
    expect(readable.stdout).toMatch(/^outcome: Complete$/m);
  });

  it("trace of a turn that is not a recipe run, or of no turn, exits 2 with one line", async () => {
    const absent = await conclave(["trace", "9", "--session", "cli-approval"]);
    expect(absent.code).toBe(2);
    expect(absent.stderr.trim().split("\n")).toHaveLength(1);
    expect(absent.stderr).toMatch(/no turn 9/);
    // A pipeline turn (its stages fall short without their workers here, but it is a turn with events).
    await conclave(["send", "--session", "cli-chat", "--timeout", "10000", "hello"]);
    const chat = await conclave(["trace", "1", "--session", "cli-chat"]);
    expect(chat.code).toBe(2);
    expect(chat.stderr.trim().split("\n")).toHaveLength(1);
    expect(chat.stderr).toMatch(/turn cli-chat\/1 is not a recipe run/);
  });
});

describe("conclave run's printer", () => {
  /** A stream that keeps what is written to it. */
  const capture = () => {
    const written: string[] = [];
    const out = {
      write: (chunk: string) => {
        written.push(chunk);
        return true;
      },
    } as unknown as NodeJS.WritableStream;
    return { out, text: () => written.join("") };
  };
  const event = (seq: number, body: EventBody) =>
    ({ session_id: "s", turn_id: 1, seq, ts_monotonic: seq, ...body }) as EngineEvent;
  const printed = (bodies: EventBody[]): string => {
    const { out, text } = capture();
    const print = createRunPrinter(false, out);
    for (const [seq, body] of bodies.entries()) print(event(seq, body));
    return text();
  };
  const start = (id: string): EventBody => ({
    kind: "STREAM_START",
    payload: { stream_id: id, content_type: "text/plain", attempt: 1 },
  });
  const chunk = (id: string, index: number, delta: string): EventBody => ({
    kind: "STREAM_CHUNK",
    payload: { stream_id: id, index, delta },
  });
  const end = (id: string, chunks: number): EventBody => ({ kind: "STREAM_END", payload: { stream_id: id, chunks } });

  it("writes an agent's default stream inline, token by token, as it comes", () => {
    const { out, text } = capture();
    const print = createRunPrinter(false, out);
    print(event(0, start("write:default")));
    print(event(1, chunk("write:default", 0, "tides: ")));
    expect(text()).toBe("        write:default › tides: ");
    print(event(2, chunk("write:default", 1, "an overview.")));
    expect(text()).toBe("        write:default › tides: an overview.");
    print(event(3, end("write:default", 2)));
    expect(text()).toBe("        write:default › tides: an overview.\n");
  });

  it("prints a second stream opened meanwhile, or one interrupted by another line, whole at its end", () => {
    expect(
      printed([
        start("a:default"),
        chunk("a:default", 0, "one "),
        start("b:default"),
        chunk("b:default", 0, "two"),
        chunk("a:default", 1, "more"),
        end("a:default", 2),
        end("b:default", 1),
      ]),
    ).toBe("        a:default › one more\n        b:default › two\n");
    expect(
      printed([
        start("a:default"),
        chunk("a:default", 0, "one "),
        { kind: "ROUTE_TAKEN", payload: { from: "x", to: "y", reason: "edge" } },
        chunk("a:default", 1, "rest"),
        end("a:default", 2),
      ]),
    ).toBe("        a:default › one \n      → y (edge)\n        a:default › … rest\n");
  });

  it("leaves other streams to the event printer (whole at their end), and --json to JSON lines", () => {
    expect(printed([start("a:notes"), chunk("a:notes", 0, "x"), end("a:notes", 1)])).toBe("        a:notes › x\n");
    const { out, text } = capture();
    createRunPrinter(true, out)(event(0, start("a:default")));
    expect(JSON.parse(text())).toMatchObject({ kind: "STREAM_START", payload: { stream_id: "a:default" } });
  });
});
