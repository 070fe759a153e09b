/**
 * `conclave dev`, as a user runs it: one command brings up NATS, the runner, the workers with
 * the user's agent, the gateway and the viewer, and prints where they are. Editing the agent's
 * project (here a file the agent module imports) reloads it: the next turn of the same session
 * runs the new code and still sees the session's earlier turn. A module that no longer loads is
 * said in one line and the previous agent keeps answering. Ctrl-C stops everything.
 */
import { type ChildProcessByStdio, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { freePort } from "../../src/nats/server.ts";
import { runConclave } from "../helpers/cli.ts";
import { outputOf } from "../helpers/streamOutput.ts";

const project = mkdtempSync(join(tmpdir(), "conclave-dev-"));
let dev: ChildProcessByStdio<null, Readable, Readable> | undefined;
afterAll(async () => {
  // A test that failed half-way: stop `dev` as Ctrl-C does, so it stops its children.
  if (dev && dev.exitCode === null && dev.signalCode === null) {
    const exited = new Promise((done) => dev!.once("exit", done));
    dev.kill("SIGINT");
    const timer = setTimeout(() => dev?.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(timer);
  }
  rmSync(project, { recursive: true, force: true });
});

const defineAgentUrl = pathToFileURL(resolve("src/agents/defineAgent.ts")).href;

/** The agent module: it answers with what ./reply.js makes of the message, and how many earlier turns it sees. */
const AGENT = `import { z } from "zod";
import { defineAgent } from ${JSON.stringify(defineAgentUrl)};
import { reply } from "./lib/reply.js";

export const counter = defineAgent({
  name: "acme.counter",
  description: "Counts the words of the message.",
  priority: "ALWAYS_ON",
  output: z.object({ reply: z.string(), earlier_turns: z.number() }),
  run: ({ input }) => ({ reply: reply(input.user_message), earlier_turns: input.episodes.length }),
});
`;
const reply = (version: string) =>
  `export const reply = (text) => \`${version}: \${text.trim().split(/\\s+/).length} words\`;\n`;

/** The agent's output in `conclave send`'s readable output. */
const agentOutput = (stdout: string) => /✓ acme\.counter .*output (\{.*\})$/m.exec(stdout)?.[1];

describe("conclave dev", () => {
  it("runs the stack, reloads the agent as its files change, keeps the session, and stops on Ctrl-C", async () => {
    writeFileSync(join(project, "package.json"), '{ "type": "module" }\n');
    // The project's dependencies (zod) are this repository's.
    symlinkSync(resolve("node_modules"), join(project, "node_modules"));
    writeFileSync(join(project, "agent.js"), AGENT);
    mkdirSync(join(project, "lib"));
    writeFileSync(join(project, "lib", "reply.js"), reply("v1"));

    const natsPort = await freePort();
    const ports = new Set([natsPort]);
    const another = async () => {
      let port = await freePort();
      while (ports.has(port)) port = await freePort();
      ports.add(port);
      return port;
    };
    const [viewerPort, gatewayPort] = [await another(), await another()];
    const natsUrl = `nats://127.0.0.1:${natsPort}`;
    dev = spawn(
      process.execPath,
      [
        CONCLAVE_BIN,
        "dev",
        "--agents",
        "./agent.js",
        "--nats-url",
        natsUrl,
        "--viewer-port",
        String(viewerPort),
        "--serve-port",
        String(gatewayPort),
        "--data-dir",
        join(project, ".conclave"),
      ],
      { cwd: project, env: { ...process.env, CONCLAVE_LOG: "quiet" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    const output = outputOf(dev.stdout, "conclave dev's output");
    const stderr = outputOf(dev.stderr, "conclave dev's stderr");
    const exited = new Promise<number | null>((done) => dev!.once("exit", (code) => done(code)));

    await output.waitFor(/^ {2}send .*$/m, 150_000);
    const viewer = `http://127.0.0.1:${viewerPort}/`;
    const gateway = `http://127.0.0.1:${gatewayPort}`;
    expect(output.text).toContain(`  viewer   ${viewer}\n`);
    expect(output.text).toContain(`  chat     ${viewer}?gateway=${encodeURIComponent(`${gateway}/ag-ui`)}\n`);
    expect(output.text).toContain(`  MCP      ${gateway}/mcp\n`);
    expect(output.text).toContain(`  A2A      ${gateway}/.well-known/agent-card.json\n`);
    expect(output.text).toContain(`  AG-UI    ${gateway}/ag-ui\n`);
    expect(output.text).toMatch(/^ {2}model {4}the offline model/m);
    expect(output.text).toMatch(/^ {2}agents {3}acme\.counter: reloaded when \.\/agent\.js /m);
    expect(output.text).toContain(`  send     npx conclave send --nats-url ${natsUrl} --session dev "hello"\n`);
    // Everything it printed is reachable: the viewer's page and the gateway.
    expect((await fetch(viewer)).status).toBe(200);
    expect((await fetch(`${gateway}/healthz`)).status).toBe(200);

    const first = await runConclave(natsUrl, ["send", "--session", "dev-loop", "one two three"]);
    expect(first.code).toBe(0);
    expect(JSON.parse(agentOutput(first.stdout)!)).toEqual({ reply: "v1: 3 words", earlier_turns: 0 });

    // A file the agent module imports changes: the agent is reloaded, and dev keeps running.
    writeFileSync(join(project, "lib", "reply.js"), reply("v2"));
    await output.waitFor(/^\[dev\] reloaded agents from \.\/agent\.js \(1 agent\)$/m, 90_000);
    const second = await runConclave(natsUrl, ["send", "--session", "dev-loop", "four words this time"]);
    expect(second.code).toBe(0);
    // The new code answers, and sees the session's earlier turn.
    expect(JSON.parse(agentOutput(second.stdout)!)).toEqual({ reply: "v2: 4 words", earlier_turns: 1 });

    // A syntax error: one line, and the agent of v2 keeps answering.
    writeFileSync(join(project, "agent.js"), AGENT.replace("export const counter", "export const counter = {"));
    const failed = await output.waitFor(/^\[dev\] reload failed: (.*)\n/m, 90_000);
    expect(failed[1]).toMatch(/^cannot load agents from \.\/agent\.js: .+ \(the previous agents keep answering\)$/);
    const third = await runConclave(natsUrl, ["send", "--session", "dev-loop", "still here"]);
    expect(third.code).toBe(0);
    expect(JSON.parse(agentOutput(third.stdout)!)).toEqual({ reply: "v2: 2 words", earlier_turns: 2 });

    dev.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(output.text).toMatch(/^\[dev\] stopped$/m);
    expect(stderr.text).not.toMatch(/"level":"(error|fatal)"|^\s+at /m);
    await expect(fetch(`${gateway}/healthz`)).rejects.toThrow();
    await expect(fetch(viewer)).rejects.toThrow();
  }, 420_000);
});
