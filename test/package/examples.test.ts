import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/nats/server.ts";
import { REPO, usePackedProject } from "./packedProject.ts";

/**
 * Every example in examples/, run the way its README says (`npm start`) inside a project
 * where the packed package is installed: the examples use only what users get.
 */
const project = usePackedProject();
const dataDir = mkdtempSync(join(tmpdir(), "conclave-examples-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

beforeAll(async () => {
  // What the TypeScript example builds with, from the npm cache…
  await project().run(
    "npm",
    // …and the MCP example's server and the SDK the worker loads for it (an optional peer).
    [
      "install",
      "--no-save",
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      "typescript@~5.9",
      "@types/node@^20",
      "@modelcontextprotocol/sdk@^1.32.2",
      "@modelcontextprotocol/server-filesystem@^2026.8.31",
    ],
    {
      timeoutMs: 120_000,
    },
  );
}, 150_000);

/** Copies examples/<name> into the project (its package.json without the dependencies the project already has) and runs `npm start`. */
async function runExample(name: string): Promise<string> {
  const dir = join(project().dir, "examples", name);
  cpSync(join(REPO, "examples", name), dir, {
    recursive: true,
    filter: (source) => !source.includes("node_modules") && !source.endsWith(".conclave"),
  });
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Record<string, unknown>;
  delete manifest.dependencies;
  delete manifest.devDependencies;
  writeFileSync(join(dir, "package.json"), JSON.stringify(manifest, null, 2));
  const port = await freePort();
  const { stdout } = await project().run("npm", ["start", "--prefix", dir], {
    env: {
      CONCLAVE_NATS_URL: `nats://127.0.0.1:${port}`,
      CONCLAVE_DATA_DIR: join(dataDir, name),
      CONCLAVE_LOG: "quiet",
    },
    timeoutMs: 150_000,
  });
  return stdout;
}

describe("the examples, against the packed package", () => {
  it("js-agent: a plain JavaScript agent in a worker of its own joins the built-in council", async () => {
    const out = await runExample("js-agent");
    expect(out).toMatch(/worker\[your agents\] ready/);
    expect(out).toMatch(
      /✓ weather\.umbrella \(.* on [^)]+\): say "Take an umbrella\."; output \{"mentions_weather":true/,
    );
    expect(out).toContain("weather.umbrella:notes › reading: Will it rain");
    expect(out).toMatch(/reply: .*Take an umbrella\./);
  }, 180_000);

  it("ts-worker-client: a strict TypeScript worker with a typed agent, and a client streaming the turn", async () => {
    const out = await runExample("ts-worker-client");
    expect(out).toMatch(/▸ agents\n\s+mood\.tracker: stressed \(intensity \d\.\d\d\)/);
    expect(out).toMatch(/outcome: (Complete|PartialSuccess); reply: .*One step at a time\./);
  }, 180_000);

  it("read-events: another process reads a session's events from a position", async () => {
    const out = await runExample("read-events");
    expect(out).toMatch(/turn 1: Complete: /);
    expect(out).toMatch(/wrote last-run\.json: read history-\d+ from position \d+/);
    const read = out.split("\n").filter((line) => /^\s*\d+\s+turn \d+\s+#\d+/.test(line));
    expect(read[0]).toMatch(/turn 2\s+#0\s+TURN_STARTED$/);
    expect(read.at(-1)).toMatch(/turn 2\s+#\d+\s+TURN_COMPLETED$/);
    expect(read.every((line) => /turn 2/.test(line))).toBe(true);
  }, 180_000);

  it("mcp-tools: a worker hosts an MCP server's tools, and a recipe's agent reads a note through one", async () => {
    const out = await runExample("mcp-tools");
    expect(out).toMatch(/worker: agents notes\.reader; tools .*mcp_files_read_text_file/);
    expect(out).toContain("tool mcp_files_read_text_file: finished");
    expect(out).toMatch(
      /output: \{"note":"Trip to Lisbon, Tuesday: .*Pack the umbrella\.","answer":"Take the umbrella\."\}/,
    );
  }, 180_000);

  it("task-ledger: a client and an agent write the ledgers, the agent reads them in its context", async () => {
    const out = await runExample("task-ledger");
    expect(out).toMatch(/turn 1: (Complete|PartialSuccess); reply: .*Next on the list: Book the venue\./);
    expect(out).toContain("Task: Organise Ana's birthday party");
    expect(out).toContain("fact by user: The party is on 14 March");
    expect(out).toContain("fact by agent:planner.organiser: the budget is 300 euros");
    expect(out).toMatch(/replayed 6 ledger events from the log: they match/);
  }, 180_000);
});
