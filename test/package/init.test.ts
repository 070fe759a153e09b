/**
 * `conclave init` as a new user runs it: in an `npm init -y` project (CommonJS) with the packed
 * package installed, then the scaffold's own scripts: `npm test` (the agent's test, node --test,
 * against the installed package), and `npm run send` and `npm run recipe` under
 * `conclave up --agents ./agents/echo.js` (the agent answers, calling its module's tool).
 * The command's own behaviour (merging, refusing, --force) is in test/cli/init.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/nats/server.ts";
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
});
