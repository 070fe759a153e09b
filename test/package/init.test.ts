/**
 * `conclave init` as a new user runs it: in an `npm init -y` project (CommonJS) with the packed
 * package installed, then the scaffold's own scripts: `npm test` (the agent's test, node --test,
 * against the installed package), `npm run send` and `npm run recipe` under
 * `conclave up --agents ./agents/echo.js` (the agent answers, calling its module's tool), and
 * the dev loop (issue 40's "Done when"): `conclave dev` with the scaffold's agent and tool, a turn
 * whose reply is the agent's own answer with its tool call shown, and an edit of the agent file
 * answered by the next turn without a restart.
 * The command's own behaviour (merging, refusing, --force) is in test/cli/init.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { freePort } from "../../src/nats/server.ts";
import { outputOf } from "../helpers/streamOutput.ts";
import { usePackedProject } from "./packedProject.ts";

const project = usePackedProject();
const dataDir = mkdtempSync(join(tmpdir(), "conclave-init-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe("conclave init in a new npm project", () => {
  it("makes the project ESM, keeps the installed conclave, and its agent test passes", async () => {
    const before = JSON.parse(readFileSync(join(project().dir, "package.json"), "utf8")) as {
      type?: string;
      dependencies: Record<string, string>;
    };
    expect(before.type).not.toBe("module"); // npm init -y's
    const { stdout } = await project().run("npx", ["conclave", "init"]);
    expect(stdout).toContain('set "type": "module"');
    const after = JSON.parse(readFileSync(join(project().dir, "package.json"), "utf8")) as {
      type: string;
      scripts: Record<string, string>;
      dependencies: Record<string, string>;
    };
    expect(after.type).toBe("module");
    expect(after.dependencies.conclave).toBe(before.dependencies.conclave); // the installed tarball, kept
    const tested = await project().run("npm", ["test"], { timeoutMs: 60_000 });
    expect(tested.stdout).toMatch(/# pass 2\b/);
    expect(tested.stdout).toMatch(/# fail 0\b/);
  }, 120_000);

  it("runs the agent and its tool under conclave up: a turn shows the tool call, the recipe answers", async () => {
    const port = await freePort();
    const { stdout } = await project().run(
      "npx",
      ["conclave", "up", "--agents", "./agents/echo.js", "--exec", "npm run send && npm run recipe"],
      {
        env: {
          CONCLAVE_NATS_URL: `nats://127.0.0.1:${port}`,
          CONCLAVE_DATA_DIR: dataDir,
          CONCLAVE_LOG: "quiet",
        },
        timeoutMs: 150_000,
      },
    );
    expect(stdout).toContain("app.echo calls count_words");
    expect(stdout).toContain('You said \\"Hello there, how are you?\\" (5 words).');
    // The recipe's output: the agent's own answer, under its step's name.
    expect(stdout).toMatch(/"echo": \{\s*"words": 5,/);
  }, 180_000);

  it("runs the agent under conclave dev: the reply is its own, with its tool call; an edit answers next", async () => {
    const ports = new Set<number>();
    const port = async () => {
      let next = await freePort();
      while (ports.has(next)) next = await freePort();
      ports.add(next);
      return next;
    };
    const natsUrl = `nats://127.0.0.1:${await port()}`;
    const env = { CONCLAVE_LOG: "quiet" };
    // `npm run dev`, as the scaffold's README says, with ports of the test's own.
    const scripts = JSON.parse(readFileSync(join(project().dir, "package.json"), "utf8")).scripts as Record<
      string,
      string
    >;
    expect(scripts.dev).toMatch(/^conclave dev --agents \.\/agents\/echo\.js/);
    const devArgs = (scripts.dev ?? "").split(" ").slice(1);
    const dev = project().start(
      join(project().dir, "node_modules", ".bin", "conclave"),
      [
        ...devArgs,
        "--nats-url",
        natsUrl,
        "--viewer-port",
        String(await port()),
        "--serve-port",
        String(await port()),
        "--data-dir",
        join(dataDir, "dev"),
      ],
      { env },
    );
    const output = outputOf(dev.stdout, "conclave dev's output");
    const exited = new Promise<number | null>((done) => dev.once("exit", (code) => done(code)));
    try {
      await output.waitFor(/^ {2}send .*$/m, 180_000);
      expect(output.text).toMatch(/^ {2}agents {3}app\.echo/m);

      const send = async (text: string) => {
        const { stdout } = await project().run(
          "npx",
          ["conclave", "send", "--nats-url", natsUrl, "--session", "new-user", "--json", text],
          { env, timeoutMs: 60_000 },
        );
        return stdout
          .split("\n")
          .filter((line) => line.startsWith("{"))
          .map((line) => JSON.parse(line) as EngineEvent);
      };
      const replyOf = (events: EngineEvent[]) => {
        const completed = events.find((event) => event.kind === "TURN_COMPLETED");
        return completed?.kind === "TURN_COMPLETED" ? completed.payload.response : undefined;
      };
      const first = await send("Hello there, how are you?");
      // The reply is the agent's own answer, nothing around it, and its tool call is in the turn.
      expect(replyOf(first)).toBe('You said "Hello there, how are you?" (5 words).');
      expect(
        first.some(
          (event) =>
            event.kind === "TOOL_CALL_REQUESTED" &&
            event.payload.agent_id === "app.echo" &&
            event.payload.tool === "count_words",
        ),
      ).toBe(true);
      // Readable output shows the tool call as well.
      const readable = await project().run(
        "npx",
        ["conclave", "send", "--nats-url", natsUrl, "--session", "new-user-readable", "Hello there"],
        { env, timeoutMs: 60_000 },
      );
      expect(readable.stdout).toContain("app.echo calls count_words");

      // The user edits the agent: dev reloads it, and the next turn answers with the new code.
      const agentFile = join(project().dir, "agents", "echo.js");
      writeFileSync(agentFile, readFileSync(agentFile, "utf8").replace("You said", "You wrote"));
      await output.waitFor(/^\[dev\] reloaded /m, 120_000);
      expect(replyOf(await send("One more message"))).toBe('You wrote "One more message" (3 words).');
    } finally {
      dev.kill("SIGINT");
    }
    expect(await exited).toBe(0);
  }, 420_000);
});
