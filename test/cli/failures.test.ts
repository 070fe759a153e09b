import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { subjects } from "../../src/bus/subjects.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { EXIT } from "../../src/cli/failures.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { DEFAULT_EVENT_STREAMS, ensureEventStreams } from "../../src/eventlog/eventStreams.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

/** The event log's stream count a runner makes by default. */
const EVENT_STREAMS = DEFAULT_EVENT_STREAMS;

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const execute = promisify(execFile);

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

const environment = (): NodeJS.ProcessEnv => ({ ...process.env, CONCLAVE_NATS_URL: nats.url, CONCLAVE_DEBUG: "" });

/** Runs `conclave <args>` as a user would, to completion. */
const cli = (args: string[]): Promise<Result> =>
  execute(process.execPath, [CONCLAVE_BIN, ...args], { env: environment() }).then(
    (result) => ({ code: 0, ...result }),
    (failure: Result) => failure,
  );

/** Runs `conclave <args> | head -1` in bash; `code` is conclave's own exit status, not head's. */
async function pipedToHead(args: string[]): Promise<Result> {
  const script = '"$@" | head -1; echo "conclave exited $' + '{PIPESTATUS[0]}" >&2';
  const { stdout, stderr } = await execute("bash", ["-c", script, "bash", process.execPath, CONCLAVE_BIN, ...args], {
    env: environment(),
  });
  const status = /conclave exited (\d+)\n$/.exec(stderr);
  return { code: Number(status?.[1]), stdout, stderr: stderr.replace(/conclave exited \d+\n$/, "") };
}

const STACK = /\n\s+at /;

/** Exactly one line on stderr, and no stack trace. */
function expectOneLine(stderr: string): string {
  expect(stderr).not.toMatch(STACK);
  const lines = stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe("conclave, with nothing running but NATS", () => {
  it("prints its version with --version and -V", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    for (const flag of ["--version", "-V"]) {
      const result = await cli([flag]);
      expect(result).toEqual({ code: EXIT.ok, stdout: `${version}\n`, stderr: "" });
    }
  });

  it("reports a usage error in one line, with exit status 2", async () => {
    const missing = await cli(["send", "hello"]);
    expect(missing.code).toBe(EXIT.usage);
    expect(expectOneLine(missing.stderr)).toBe("conclave send: --session is required (see conclave send --help)");
    const unknown = await cli(["events", "--session", "s", "--bogus"]);
    expect(unknown.code).toBe(EXIT.usage);
    expect(expectOneLine(unknown.stderr)).toMatch(/^conclave events: Unknown option '--bogus'/);
  });

  it("with --json, reports a failure as one {error:{code,message}} line on stderr", async () => {
    const result = await cli(["events", "--json", "--turn", "0", "--session", "s"]);
    expect(result.code).toBe(EXIT.usage);
    expect(result.stdout).toBe("");
    expect(JSON.parse(expectOneLine(result.stderr))).toEqual({
      error: { code: "usage", message: "--turn must be a whole number from 1" },
    });
  });

  it("reads events and turns of a server where no turn ever ran as an empty result, not a stack", async () => {
    const events = await cli(["events", "--session", "fresh"]);
    expect(events).toMatchObject({ code: EXIT.ok, stdout: "" });
    expect(expectOneLine(events.stderr)).toBe("no events stored for session fresh");
    const turns = await cli(["turns", "--session", "fresh"]);
    expect(turns).toMatchObject({ code: EXIT.ok, stdout: "" });
    expect(expectOneLine(turns.stderr)).toBe("no turns yet for session fresh");
    expect(await cli(["turns", "--json", "--session", "fresh"])).toEqual({ code: EXIT.ok, stdout: "", stderr: "" });
  });

  it("says in one line, with exit status 3, that no runner answers a send", async () => {
    const result = await cli(["send", "--session", "nobody", "hello"]);
    expect(result.code).toBe(EXIT.unavailable);
    expect(expectOneLine(result.stderr)).toMatch(/^conclave send: .*conclave\.turn\.submit\.nobody.*is a runner up\?/);
    const json = await cli(["send", "--json", "--session", "nobody", "hello"]);
    expect(json.code).toBe(EXIT.unavailable);
    expect(JSON.parse(expectOneLine(json.stderr))).toMatchObject({ error: { code: "no_responders" } });
  });

  it("says in one line, with exit status 3, that NATS cannot be reached and where; --debug adds the stack", async () => {
    const args = ["events", "--session", "s", "--nats-url", "nats://ana:s3cret@127.0.0.1:1"];
    const result = await cli(args);
    expect(result.code).toBe(EXIT.unavailable);
    const line = expectOneLine(result.stderr);
    expect(line).toMatch(/^conclave events: cannot reach NATS at nats:\/\/ana:\*+@127\.0\.0\.1:1 \(/);
    expect(line).not.toContain("s3cret");
    const debug = await cli([...args, "--debug"]);
    expect(debug.code).toBe(EXIT.unavailable);
    expect(debug.stderr).toMatch(STACK);
  });
});

describe("conclave send, answered by a runner that never runs the turn", () => {
  it("says in one line, with exit status 1, that the turn did not complete within --timeout", async () => {
    const nc = await nats.connect("runner");
    await ensureEventStreams(await jetstreamManager(nc));
    const ack = { session_id: "stalled", turn_id: 1, events_subject: subjects.turnEvents("stalled", 1, EVENT_STREAMS) };
    const stalled = nc.subscribe(subjects.turnSubmit("stalled"), {
      callback: (_error, msg) => {
        msg.respond(JSON.stringify(ack));
      },
    });
    try {
      const result = await cli(["send", "--session", "stalled", "--timeout", "300", "hello"]);
      expect(result.code).toBe(EXIT.turnFailed);
      expect(expectOneLine(result.stderr)).toBe("conclave send: turn stalled/1 did not complete within 300 ms");
    } finally {
      stalled.unsubscribe();
    }
  });
});

describe("conclave with a runner up", () => {
  beforeAll(async () => {
    await processes.spawn("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]);
    await processes.spawn("runner", ["runner"]);
  });

  it("send --json stops quietly once head has its line", async () => {
    const result = await pipedToHead(["send", "--json", "--session", "piped", "I'm stressed about my deadline"]);
    expect(JSON.parse(result.stdout)).toMatchObject({ session_id: "piped", kind: "TURN_STARTED" });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(EXIT.ok);
  });

  it("events stops quietly once head has its line, however much is stored", async () => {
    // More than a pipe holds (64 KiB; a turn's events are about 18 KB as JSON).
    const nc = await nats.connect("client");
    for (let turn = 1; turn <= 6; turn++)
      await watchTurn(nc, await submitTurn(nc, "piped-log", { text: `turn ${turn}: what next?` }), () => {}, 20_000);
    for (const args of [["--json"], []]) {
      const result = await pipedToHead(["events", "--session", "piped-log", ...args]);
      expect(result.stdout.split("\n")).toHaveLength(2);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(EXIT.ok);
    }
  });
});
