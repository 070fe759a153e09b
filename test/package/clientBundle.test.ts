import { join } from "node:path";
import { build, type Metafile } from "esbuild";
import { describe, expect, it } from "vitest";
import { REPO } from "./packedProject.ts";

/** Issue 35: the client (`conclave/client`) carries none of the runtime, the workers, the gateway or the CLI. */
const SERVER_SIDE = /^src\/(runtime|workers|gateway|cli)\//;

/** The client entry bundled as a user would (packages external), with its metafile. */
async function clientInputs(): Promise<Metafile["inputs"]> {
  const result = await build({
    entryPoints: [join(REPO, "src", "client", "index.ts")],
    absWorkingDir: REPO,
    bundle: true,
    platform: "node",
    packages: "external",
    metafile: true,
    write: false,
    format: "esm",
    logLevel: "silent",
  });
  return result.metafile.inputs;
}

/** How `target` is reached from `entry`: the shortest chain of imports, by breadth-first search. */
function chainTo(inputs: Metafile["inputs"], entry: string, target: string): string[] {
  const cameFrom = new Map<string, string | undefined>([[entry, undefined]]);
  const queue = [entry];
  for (let at = queue.shift(); at !== undefined; at = queue.shift()) {
    if (at === target) break;
    for (const { path } of inputs[at]?.imports ?? []) {
      if (cameFrom.has(path) || !(path in inputs)) continue;
      cameFrom.set(path, at);
      queue.push(path);
    }
  }
  const chain: string[] = [];
  for (let step: string | undefined = target; step !== undefined; step = cameFrom.get(step)) chain.unshift(step);
  return chain;
}

describe("the client bundle", () => {
  it("holds nothing of src/runtime, src/workers, src/gateway or src/cli", async () => {
    const inputs = await clientInputs();
    const entry = "src/client/index.ts";
    expect(Object.keys(inputs)).toContain(entry);
    const offending = Object.keys(inputs)
      .filter((path) => SERVER_SIDE.test(path))
      .map((path) => chainTo(inputs, entry, path).join(" -> "));
    expect(offending, offending.join("\n")).toEqual([]);
  }, 60_000);
});
