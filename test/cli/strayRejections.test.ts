import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../src/nats/server.ts";

describe("a long-lived process", () => {
  it("logs a promise rejection nobody handled on one line and keeps running", async () => {
    const module = join(REPO_ROOT, "src", "cli", "strayRejections.ts");
    const logModule = join(REPO_ROOT, "src", "telemetry", "log.ts");
    // The process rejects a promise nobody awaits, then proves it is still alive by finishing its own work.
    const script = `
      const { logStrayRejections } = await import(${JSON.stringify(module)});
      const { createLogger } = await import(${JSON.stringify(logModule)});
      logStrayRejections(createLogger("runner"));
      Promise.reject(new Error("lost\\nreply"));
      await new Promise((resolve) => setTimeout(resolve, 50));
      console.log("still running");
    `;
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      { cwd: REPO_ROOT, env: { ...process.env, CONCLAVE_LOG: "info" } },
    );
    expect(stdout.trim()).toBe("still running");
    const line = JSON.parse(stderr.trim().split("\n").at(-1) ?? "{}");
    expect(line).toMatchObject({
      level: "error",
      role: "runner",
      msg: "unhandled rejection (kept running): lost reply",
    });
  });
});
