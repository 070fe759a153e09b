/**
 * `conclave doctor`: every optional feature, whether this installation has it, and the one
 * `npm install` line that adds what is missing. Here with every package (this checkout), and with
 * some made missing by a real Node resolution hook (test/helpers/hidePackages.mjs); the packed
 * package without any is in test/package/pack.test.ts. A feature that falls back says so: the
 * gateway without AG-UI's packages.
 */
import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import type { FeatureState } from "../../src/optionalFeatures.ts";
import { OPTIONAL_FEATURES } from "../../src/optionalFeatures.ts";
import { useNatsServer } from "../helpers/nats.ts";

const REPO = join(import.meta.dirname, "..", "..");
const HIDE = join(REPO, "test", "helpers", "hidePackages.mjs");

/** The environment of a conclave process in which `hidden` packages cannot be imported. */
const hiding = (hidden: string[]): NodeJS.ProcessEnv => ({
  ...process.env,
  NODE_OPTIONS: `--import=${HIDE}`,
  CONCLAVE_TEST_HIDE_PACKAGES: hidden.join(","),
  CONCLAVE_LOG: "quiet",
});

async function doctor(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const { stdout } = await promisify(execFile)(process.execPath, [CONCLAVE_BIN, "doctor", ...args], {
    env,
    timeout: 60_000,
  });
  return stdout;
}

describe("conclave doctor", () => {
  it("covers every optional peer dependency of package.json", () => {
    const manifest = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as {
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    const optional = Object.entries(manifest.peerDependenciesMeta)
      .filter(([, meta]) => meta.optional)
      .map(([name]) => name);
    const listed = new Set(OPTIONAL_FEATURES.flatMap((feature) => feature.packages));
    expect([...listed].sort()).toEqual(optional.sort());
  });

  it("says every feature is available where every package is installed (this checkout)", async () => {
    const text = await doctor([]);
    expect(text).toContain(`All ${OPTIONAL_FEATURES.length} optional features are available.`);
    expect(text).not.toContain("✗");
    expect(text).toMatch(/✓ the viewer's statechart diagrams \(conclave viewer\)\s+elkjs@\d/);
    const report = JSON.parse(await doctor(["--json"])) as { features: FeatureState[]; install: string | null };
    expect(report.install).toBeNull();
    expect(report.features.map((feature) => [feature.id, feature.available])).toEqual(
      OPTIONAL_FEATURES.map((feature) => [feature.id, true]),
    );
  });

  it("names what is missing, what it costs, and the one line that adds it", async () => {
    const report = JSON.parse(await doctor(["--json"], hiding(["ink", "@statelyai/inspect"]))) as {
      features: FeatureState[];
      install: string | null;
    };
    const off = report.features.filter((feature) => !feature.available);
    expect(off.map((feature) => feature.id)).toEqual(["chat", "inspect"]);
    expect(off[0]).toMatchObject({
      install: "npm install ink",
      packageStates: [
        { name: "ink", available: false, problem: "not installed" },
        { name: "react", available: true },
      ],
    });
    expect(report.install).toBe("npm install ink @statelyai/inspect");
    const text = await doctor([], hiding(["ink", "@statelyai/inspect"]));
    expect(text).toMatch(/✗ the terminal UI \(conclave chat\)\s+ink \(not installed\), react@\d/);
    expect(text).toContain("without it: conclave chat refuses to start");
    expect(text).toContain("2 of 12 features need packages. To add them all:\n  npm install ink @statelyai/inspect");
  });
});

describe("conclave serve without AG-UI's packages", () => {
  const nats = useNatsServer();

  it("says, in one line, that AG-UI is off and what adds it", async () => {
    const child = spawn(process.execPath, [CONCLAVE_BIN, "serve", "--port", "0"], {
      env: { ...hiding(["@ag-ui/core"]), CONCLAVE_NATS_URL: nats.url },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const line = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no AG-UI line in: ${output}`)), 60_000);
      const check = (chunk: Buffer) => {
        output += chunk.toString();
        const found = /^Conclave gateway: AG-UI.*$/m.exec(output);
        if (found) {
          clearTimeout(timer);
          resolve(found[0]);
        }
      };
      child.stdout.on("data", check);
      child.stderr.on("data", check);
      child.once("exit", (code) => reject(new Error(`serve exited (${code}): ${output}`)));
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    expect(line).toMatch(
      /^Conclave gateway: AG-UI: conclave serve's \/ag-ui endpoint is off \(\/ag-ui answers 501\): it needs @ag-ui\/core and @ag-ui\/encoder: npm install @ag-ui\/core @ag-ui\/encoder$/,
    );
  });
});
