import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { freePort } from "../../src/nats/server.ts";
import { REPO, usePackedProject } from "./packedProject.ts";

/** The root entry's public API (issue 12): the core. */
const ROOT_API = ["defineAgent", "defineTool", "startWorker", "startRunner", "connect"];
/** What users of recipes need, from `conclave/recipes`. */
const RECIPES_API = ["loadRecipe", "loadRecipeFile", "parseRecipeText", "runRecipeInProcess", "simulationTrace"];

/** Optional peer dependencies: installed by those who use the feature that needs them, never by default. */
const OPTIONAL_PEERS = [
  "openai",
  "gpt-tokenizer",
  "pg",
  "redis",
  "ink",
  "react",
  "@statelyai/inspect",
  "elkjs",
  "@modelcontextprotocol/sdk",
  "@ag-ui/core",
  "@ag-ui/encoder",
  // the OpenTelemetry SDK: tracing is off unless OTEL_* asks for it (only @opentelemetry/api is a dependency)
  "@opentelemetry/sdk-trace-base",
  "@opentelemetry/exporter-trace-otlp-http",
  "@opentelemetry/exporter-trace-otlp-proto",
];

/**
 * What the install pulled in besides Conclave itself, in KiB on disk (`du -sk`), when pg, redis,
 * ink and react and @statelyai/inspect were dependencies and @nats-io/services brought a second
 * nats-core: 90,084 KiB (99,160 with node_modules/conclave; 58.3 MB of file contents), measured
 * on Linux (ext4, 4 KiB blocks). Without them and without `openai` (an optional peer since LLM mode
 * is the only user of it): about 20,000 KiB.
 */
const DEPENDENCIES_KIB_WITH_ALL_PEERS = 90_084;

/** The environment of a command run there: no LLM (the offline model) and the default NATS stores, whatever this shell has. */
const OFFLINE_NATS_ONLY = {
  CONCLAVE_LLM_BASE_URL: "",
  // An OPENAI_API_KEY in this shell would select LLM mode: `offline` keeps the offline model.
  CONCLAVE_LLM_MODEL: "offline",
  CONCLAVE_MEMORY_BACKEND: "",
  CONCLAVE_POSTGRES_URL: "",
  CONCLAVE_REDIS_URL: "",
  CONCLAVE_DEBUG: "",
  CONCLAVE_LOG: "quiet",
};

describe("the packed package, installed into an empty project", () => {
  const project = usePackedProject();

  it("installs without an engine warning, and without tsx", () => {
    expect(project().installOutput).not.toMatch(/EBADENGINE/);
    expect(existsSync(join(project().dir, "node_modules", "conclave", "dist", "src", "cli", "main.js"))).toBe(true);
    expect(existsSync(join(project().dir, "node_modules", "tsx"))).toBe(false);
  });

  it("loads from plain Node ESM: the root API, the client, worker and recipes entries", async () => {
    const { stdout } = await project().run(process.execPath, [
      "--input-type=module",
      "-e",
      `const entries = {};
       for (const name of ["conclave", "conclave/client", "conclave/worker", "conclave/recipes"]) {
         const module = await import(name);
         entries[name] = Object.fromEntries(Object.entries(module).map(([key, value]) => [key, typeof value]));
       }
       console.log(JSON.stringify(entries));`,
    ]);
    const entries = JSON.parse(stdout) as Record<string, Record<string, string>>;
    for (const name of ROOT_API) expect(entries.conclave?.[name], name).toBe("function");
    expect(Object.keys(entries["conclave/client"]!).length).toBeGreaterThan(0);
    expect(Object.keys(entries["conclave/worker"]!).length).toBeGreaterThan(0);
    for (const name of RECIPES_API) expect(entries["conclave/recipes"]?.[name], name).toBe("function");
    // The recipe loader's internals are no part of any entry.
    for (const entry of Object.values(entries)) {
      expect(entry).not.toHaveProperty("parseExpression");
      expect(entry).not.toHaveProperty("conditionHolds");
    }
  });

  it("installs without the optional peers and one nats-core, in under a third of the size it took with them", async () => {
    const modules = join(project().dir, "node_modules");
    for (const name of OPTIONAL_PEERS) expect(existsSync(join(modules, name)), name).toBe(false);
    const { stdout: natsCores } = await project().run("npm", ["ls", "--all", "--parseable", "@nats-io/nats-core"]);
    const natsCoreDirs = natsCores.trim().split("\n");
    expect(natsCoreDirs).toHaveLength(1);
    expect(natsCoreDirs[0]).toMatch(/project[\\/]node_modules[\\/]@nats-io[\\/]nats-core$/);
    const kib = async (path: string) => Number((await project().run("du", ["-sk", path])).stdout.split(/\s/)[0]);
    const dependencies = (await kib(modules)) - (await kib(join(modules, "conclave")));
    expect(dependencies).toBeGreaterThan(0);
    expect(dependencies).toBeLessThan(DEPENDENCIES_KIB_WITH_ALL_PEERS / 3);
  });

  it("runs a turn without them: `conclave up --exec 'conclave send …'`", async () => {
    const conclave = join(project().dir, "node_modules", ".bin", "conclave");
    const { stdout } = await project().run(
      conclave,
      [
        "up",
        "--nats-url",
        `nats://127.0.0.1:${await freePort()}`,
        "--data-dir",
        join(project().dir, ".conclave"),
        "--exec",
        `"${conclave}" send --session packed "hello there"`,
      ],
      { env: OFFLINE_NATS_ONLY, timeoutMs: 120_000 },
    );
    expect(stdout).toMatch(/reply: \S/);
    expect(stdout).toMatch(/\[up\] stopped/);
  }, 150_000);

  it("`conclave chat` without ink and react says, in one line, what to install", async () => {
    const conclave = join(project().dir, "node_modules", ".bin", "conclave");
    const failure = await promisify(execFile)(conclave, ["chat"], {
      cwd: project().dir,
      env: { ...process.env, ...OFFLINE_NATS_ONLY },
    }).then(
      () => null,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failure?.code).toBe(3);
    expect(failure?.stderr).toBe(
      "conclave chat: the terminal UI needs the optional packages ink and react: npm install ink react\n",
    );
  });

  it("`conclave worker` in LLM mode without openai says, in one line, what to install", async () => {
    const conclave = join(project().dir, "node_modules", ".bin", "conclave");
    const failure = await promisify(execFile)(conclave, ["worker", "--services", "council"], {
      cwd: project().dir,
      // Never reached: the missing package is said before the worker connects or calls anything.
      env: {
        ...process.env,
        ...OFFLINE_NATS_ONLY,
        CONCLAVE_LLM_BASE_URL: "http://127.0.0.1:9/v1",
        CONCLAVE_LLM_MODEL: "some-model",
        CONCLAVE_NATS_URL: "nats://127.0.0.1:9",
      },
    }).then(
      () => null,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failure?.code).toBe(3);
    expect(failure?.stderr).toBe(
      "conclave worker: LLM mode (an OpenAI-compatible model or embedder) needs the optional package openai: npm install openai\n",
    );
  });

  it("`conclave send` with tracing asked for but no OpenTelemetry SDK says, in one line, what to install", async () => {
    const conclave = join(project().dir, "node_modules", ".bin", "conclave");
    const failure = await promisify(execFile)(conclave, ["send", "--session", "traced", "hello"], {
      cwd: project().dir,
      // Never reached: the missing packages are said before anything connects.
      env: {
        ...process.env,
        ...OFFLINE_NATS_ONLY,
        OTEL_TRACES_EXPORTER: "otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9",
        CONCLAVE_NATS_URL: "nats://127.0.0.1:9",
      },
    }).then(
      () => null,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failure?.code).toBe(3);
    expect(failure?.stderr).toMatch(
      /^conclave send: Tracing \(asked for by the OTEL_\* variables\) needs the optional packages? [^\n]*@opentelemetry\/sdk-trace-base[^\n]*: npm install [^\n]*@opentelemetry\/exporter-trace-otlp-proto[^\n]*\n$/,
    );
  });

  it("`conclave doctor` lists every optional feature as missing, and the one line that adds them", async () => {
    const conclave = join(project().dir, "node_modules", ".bin", "conclave");
    const { stdout } = await project().run(conclave, ["doctor", "--json"], { env: OFFLINE_NATS_ONLY });
    const report = JSON.parse(stdout) as {
      features: { id: string; available: boolean; packageStates: { name: string; problem?: string }[] }[];
      install: string | null;
    };
    expect(report.features.length).toBeGreaterThanOrEqual(12);
    for (const feature of report.features) {
      expect(feature.available).toBe(false);
      for (const state of feature.packageStates) expect(state.problem).toBe("not installed");
    }
    const installed = (report.install ?? "").replace(/^npm install /, "").split(" ");
    expect(installed.sort()).toEqual(
      [
        ...new Set([
          ...OPTIONAL_PEERS,
          "@a2a-js/sdk",
          "@opentelemetry/resources",
          "@opentelemetry/context-async-hooks",
          "@opentelemetry/core",
        ]),
      ].sort(),
    );
    const text = (await project().run(conclave, ["doctor"], { env: OFFLINE_NATS_ONLY })).stdout;
    expect(text).toMatch(/✗ the viewer's statechart diagrams \(conclave viewer\)\s+elkjs \(not installed\)/);
    expect(text).toContain(`${report.features.length} of ${report.features.length} features need packages`);
  });

  it("`conclave --version` prints the package's version", async () => {
    const { stdout } = await project().run(join(project().dir, "node_modules", ".bin", "conclave"), ["--version"]);
    expect(stdout.trim()).toBe(project().version);
  });

  it("type-checks from strict TypeScript (module nodenext), its declarations included", async () => {
    project().write(
      "tsconfig.json",
      JSON.stringify({
        compilerOptions: {
          strict: true,
          target: "es2022",
          module: "nodenext",
          moduleResolution: "nodenext",
          noEmit: true,
          skipLibCheck: false,
          // @types/node from this checkout: the project has no dependencies of its own.
          typeRoots: [join(REPO, "node_modules", "@types")],
          types: ["node"],
        },
        files: ["consumer.ts"],
      }),
    );
    project().write(
      "consumer.ts",
      `import { ${ROOT_API.join(", ")} } from "conclave";
import * as client from "conclave/client";
import * as worker from "conclave/worker";
import * as recipes from "conclave/recipes";

export const api: unknown[] = [${ROOT_API.join(", ")}, client, worker, recipes];
`,
    );
    const tsc = join(REPO, "node_modules", "typescript", "bin", "tsc");
    const result = await project()
      .run(process.execPath, [tsc, "-p", "."], { timeoutMs: 120_000 })
      .catch((error: Error) => ({ stdout: error.message, stderr: "" }));
    expect(result.stdout).toBe("");
  }, 150_000);

  it("ships declarations that import .js files, never .ts", () => {
    const dist = join(project().dir, "node_modules", "conclave", "dist");
    const declarations = readdirSync(dist, { recursive: true, encoding: "utf8" })
      .filter((name) => name.endsWith(".d.ts"))
      .map((name) => ({ name, text: readFileSync(join(dist, name), "utf8") }));
    expect(declarations.filter(({ text }) => /from "\.{1,2}\/[^"]+\.js"/.test(text)).length).toBeGreaterThan(10);
    expect(declarations.filter(({ text }) => /from "\.{1,2}\/[^"]+\.ts"/.test(text)).map(({ name }) => name)).toEqual(
      [],
    );
  });
});
