/**
 * The shipped operator recipe (seed 002's pipeline) with the shipped tools,
 * on a real nats-server: a dry run shows the plan and changes nothing; a
 * live run waits for a person's approval of its one write, then writes
 * inside the sandbox only; a rollback undoes it.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { parseRecipeText } from "../../src/recipes/load.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const sandbox = mkdtempSync(join(tmpdir(), "conclave-operator-"));
let client: ConclaveClient;

/** Every file under a directory (directories left by a rollback are not files). */
const filesIn = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));

const operator = () => parseRecipeText(readFileSync("recipes/operator.yaml", "utf8")) as JsonObject;
const request = { request: "How full is the disk, and what is running?" };
const RUNBOOK = `# Disk runbook

When the disk is full, rotate the quokka logs first. Then empty the build cache.
`;

beforeAll(async () => {
  await processes.spawn("operator", ["worker", "--agents", "./agents/recipes/index.ts", "--tools", "builtin"], {
    CONCLAVE_SANDBOX_DIR: sandbox,
  });
  // The retrieve step's knowledge: the runbooks collection the recipe names, on a knowledge worker.
  await processes.spawn("knowledge", ["worker", "--services", "knowledge"]);
  await processes.spawn("runner", ["runner"]);
  client = await connect({ nc: await nats.connect("client") });
  await client.knowledge.add("runbooks", [{ document: "disk.md", text: RUNBOOK }]);
});

const conclave = (args: string[]) => runConclave(nats.url, args);

describe("the operator recipe", () => {
  it("in a dry run, plans and shows the write it would make, and changes nothing on disk", async () => {
    const run = await client.run("operator-dry", operator(), { inputs: request, dryRun: true });
    expect(run.status).toBe("completed");
    if (run.status !== "completed") return;
    expect(run.outcome.status).toBe("Complete");
    expect(run.output.parse).toMatchObject({ intent: "system_report" });
    expect(run.output.retrieve).toMatchObject({ disk: { path: "/" }, processes: { processes: expect.any(Array) } });
    // The retrieve step searched the runbooks collection the recipe names; the reason step cites what it found.
    const citation = `runbooks/disk.md@${RUNBOOK.indexOf("# Disk")}`;
    expect((run.output.retrieve as { knowledge?: unknown[] }).knowledge?.[0]).toMatchObject({
      citation,
      text: expect.stringContaining("rotate the quokka logs"),
    });
    expect((run.output.reason as { findings: string[] }).findings).toContain(
      `the runbook says (${citation}): When the disk is full, rotate the quokka logs first.`,
    );
    expect((run.output.plan as { actions: unknown[] }).actions).toHaveLength(1);
    expect(run.output.executed).toEqual({
      results: [
        {
          tool: "sandbox_write",
          result: {
            would_write: expect.stringContaining("reports/system.md"),
            bytes: expect.any(Number),
            exists: false,
          },
        },
      ],
    });
    expect(filesIn(sandbox)).toEqual([]);
  });

  it("live, waits for approval of its write, then writes inside the sandbox only; a rollback undoes it", async () => {
    const run = await client.run("operator-live", operator(), { inputs: request });
    expect(run).toMatchObject({ status: "suspended", node: "execute", requiredRole: "operator" });
    expect(filesIn(sandbox)).toEqual([]);
    // The run's log says it waits a moment before its status does.
    await until(async () => (await client.approvals("operator-live")).length === 1, { what: "the pending approval" });
    const [pending] = await client.approvals("operator-live");
    expect(pending).toMatchObject({ tool: "sandbox_write", args: { path: "reports/system.md" } });

    const done = await client.approve(pending!.id, { userId: "ops", reason: "report wanted" });
    expect(done.status).toBe("completed");
    if (done.status !== "completed") return;
    expect(done.outcome.status).toBe("Complete");
    const report = join(sandbox, "reports", "system.md");
    expect(readFileSync(report, "utf8")).toMatch(/^# System report\n\n- \/ is \d+(\.\d+)?% full/);
    expect((done.output.store as { summary: string }).summary).toContain("sandbox_write: done");

    const rolled = await client.rollback("operator-live", run.turnId);
    expect(rolled.calls).toEqual([{ call_id: expect.stringMatching(/^execute\./), tool: "sandbox_write", ok: true }]);
    expect(existsSync(report)).toBe(false);
  });

  it("its tools are discoverable: conclave agents lists them with their risk and effect", async () => {
    const listed = await conclave(["agents"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^tool disk_usage +safe +read /m);
    expect(listed.stdout).toMatch(/^tool sandbox_write +standard +write +dry run +rollback /m);
    expect(listed.stdout).toMatch(/^operator\.executor /m);
  });

  it("from the command line: --dry-run prints the plan and exits 0; live, it exits 5 saying how to approve", async () => {
    const input = JSON.stringify(request);
    const dry = await conclave([
      "run",
      "recipes/operator.yaml",
      "--dry-run",
      "--input",
      input,
      "--session",
      "operator-cli",
    ]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('"would_write"');
    expect(dry.stdout).toContain("# System report");
    expect(filesIn(sandbox)).toEqual([]);
    const live = await conclave(["run", "recipes/operator.yaml", "--input", input, "--session", "operator-cli"]);
    expect(live.code).toBe(5);
    expect(live.stdout).toMatch(/answer with: conclave approve operator-cli\/\d+ --user-id <you> --role operator/);
    expect(filesIn(sandbox)).toEqual([]);
  });
});
