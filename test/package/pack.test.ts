import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO, usePackedProject } from "./packedProject.ts";

/** The root entry's public API (issue 12). */
const ROOT_API = ["defineAgent", "startWorker", "startRunner", "connect"];

describe("the packed package, installed into an empty project", () => {
  const project = usePackedProject();

  it("installs without an engine warning, and without tsx", () => {
    expect(project().installOutput).not.toMatch(/EBADENGINE/);
    expect(existsSync(join(project().dir, "node_modules", "conclave", "dist", "src", "cli", "main.js"))).toBe(true);
    expect(existsSync(join(project().dir, "node_modules", "tsx"))).toBe(false);
  });

  it("loads from plain Node ESM: the root API, the client and the worker entries", async () => {
    const { stdout } = await project().run(process.execPath, [
      "--input-type=module",
      "-e",
      `const entries = {};
       for (const name of ["conclave", "conclave/client", "conclave/worker"]) {
         const module = await import(name);
         entries[name] = Object.fromEntries(Object.entries(module).map(([key, value]) => [key, typeof value]));
       }
       console.log(JSON.stringify(entries));`,
    ]);
    const entries = JSON.parse(stdout) as Record<string, Record<string, string>>;
    for (const name of ROOT_API) expect(entries.conclave?.[name], name).toBe("function");
    expect(Object.keys(entries["conclave/client"]!).length).toBeGreaterThan(0);
    expect(Object.keys(entries["conclave/worker"]!).length).toBeGreaterThan(0);
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

export const api: unknown[] = [${ROOT_API.join(", ")}, client, worker];
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
