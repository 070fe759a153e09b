/**
 * `conclave init [DIR]`: the scaffold's files, package.json made ESM (merged into one
 * `npm init -y` wrote, or written new), a second init refused without --force, and the
 * scaffold's recipe valid. The scaffold's own test run against the packed package, as a
 * user installs it, is in test/package/init.test.ts.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { AGENT_FILE, RECIPE_FILE, SCRIPTS, TEST_FILE } from "../../src/cli/initScaffold.ts";
import { packageVersion } from "../../src/version.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "conclave-init-"));
  dirs.push(dir);
  return dir;
}

/** Runs `conclave ...args` in `cwd`: its status and output, whether it failed or not. */
async function conclave(cwd: string, args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CONCLAVE_BIN, ...args], {
      cwd,
      timeout: 60_000,
    });
    return { status: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout: string; stderr: string };
    return { status: failed.code ?? -1, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const manifestOf = (dir: string) =>
  JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
    name?: string;
    type?: string;
    scripts: Record<string, string>;
    dependencies: Record<string, string>;
    [field: string]: unknown;
  };

describe("conclave init", () => {
  it("writes the scaffold into a missing directory, with an ESM package.json, and says what to run", async () => {
    const root = tempDir();
    const result = await conclave(root, ["init", "my-app"]);
    expect(result.status).toBe(0);
    const dir = join(root, "my-app");
    for (const path of [AGENT_FILE, RECIPE_FILE, TEST_FILE, "README.md", "package.json"]) {
      expect(existsSync(join(dir, path)), path).toBe(true);
      expect(result.stdout).toContain(path);
    }
    const manifest = manifestOf(dir);
    expect(manifest.name).toBe("my-app");
    expect(manifest.type).toBe("module");
    expect(manifest.scripts).toEqual(SCRIPTS);
    expect(manifest.scripts.dev).toBe(`conclave dev --agents ./${AGENT_FILE} --pipeline agents`);
    expect(manifest.scripts.start).toBe(`conclave up --agents ./${AGENT_FILE} --pipeline agents`);
    expect(manifest.dependencies.conclave).toBe(`^${packageVersion()}`);
    expect(result.stdout).toContain("cd my-app");
    expect(result.stdout).toContain("npm run send");
    const agent = readFileSync(join(dir, AGENT_FILE), "utf8");
    expect(agent).toContain('from "conclave/worker"');
    expect(agent).toMatch(/export const \w+ = defineTool\(/);
    expect(agent).toMatch(/export const \w+ = defineAgent\(/);
    const readme = readFileSync(join(dir, "README.md"), "utf8");
    for (const command of Object.values(SCRIPTS)) expect(readme).toContain(command.replaceAll("|", "\\|"));
    // The recipe is one the runner accepts.
    const validated = await conclave(dir, ["recipe", "validate", RECIPE_FILE]);
    expect(validated.stdout).toContain("ok");
    expect(validated.status).toBe(0);
  });

  it("merges into package.json: ESM set, the placeholder test replaced, what the user had kept", async () => {
    const dir = tempDir();
    const written = {
      name: "mine",
      version: "1.0.0",
      main: "index.js",
      scripts: { test: 'echo "Error: no test specified" && exit 1', send: "node send.js", lint: "biome check" },
      keywords: [],
      license: "ISC",
      type: "commonjs",
      dependencies: { express: "^5.0.0" },
    };
    writeFileSync(join(dir, "package.json"), JSON.stringify(written, null, 2));
    const result = await conclave(dir, ["init"]);
    expect(result.status).toBe(0);
    const manifest = manifestOf(dir);
    expect(manifest.type).toBe("module");
    expect(manifest).toMatchObject({ name: "mine", version: "1.0.0", main: "index.js", license: "ISC" });
    expect(manifest.scripts).toEqual({
      test: "node --test",
      send: "node send.js",
      lint: "biome check",
      dev: SCRIPTS.dev,
      start: SCRIPTS.start,
      recipe: SCRIPTS.recipe,
    });
    expect(manifest.dependencies).toMatchObject({ express: "^5.0.0", conclave: `^${packageVersion()}` });
    expect(result.stdout).toContain('set "type": "module" (was "commonjs")');
    expect(result.stdout).toContain("replaced script test: node --test");
    expect(result.stdout).toContain("kept your script send (node send.js)");
    expect(result.stdout).toContain("added dependency conclave@");
  });

  it("refuses to overwrite without --force, in one line, and overwrites with it", async () => {
    const dir = tempDir();
    expect((await conclave(dir, ["init"])).status).toBe(0);
    writeFileSync(join(dir, AGENT_FILE), "// my own agent\n");
    const refused = await conclave(dir, ["init"]);
    expect(refused.status).toBe(2);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain(`already has ${AGENT_FILE}`);
    expect(refused.stderr).toContain("--force");
    expect(readFileSync(join(dir, AGENT_FILE), "utf8")).toBe("// my own agent\n");

    const forced = await conclave(dir, ["init", "--force"]);
    expect(forced.status).toBe(0);
    expect(forced.stdout).toContain(`overwrote  ${AGENT_FILE}`);
    expect(readFileSync(join(dir, AGENT_FILE), "utf8")).toContain("defineAgent");
    expect(forced.stdout).toContain("nothing to change");
  });

  it("refuses a package.json that is not JSON, writing nothing", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "package.json"), "{ not json");
    const refused = await conclave(dir, ["init"]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/package\.json is not valid JSON/);
    expect(existsSync(join(dir, AGENT_FILE))).toBe(false);
  });

  it("is listed in the global --help", async () => {
    const { stdout } = await conclave(tmpdir(), ["--help"]);
    expect(stdout).toMatch(/\n {2}init {6}write a new project/);
  });
});
