import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { useNatsServer } from "../helpers/nats.ts";

// No runner on this server: conclave cancel's exit statuses for input and availability.
const nats = useNatsServer();
const run = promisify(execFile);

const cancel = (...args: string[]) =>
  run(process.execPath, [CONCLAVE_BIN, "cancel", ...args], {
    env: { ...process.env, CONCLAVE_NATS_URL: nats.url, CONCLAVE_LOG: "quiet" },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );

describe("conclave cancel", () => {
  it("exits 2 with one line for bad input", async () => {
    for (const args of [
      ["--session", "s"],
      ["--session", "s", "x"],
      ["--session", "s", "0"],
      ["--session", "a b", "1"],
      ["1"],
    ]) {
      const result = await cancel(...args);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stdout).toBe("");
    }
  });

  it("exits 3 with one line when no runner answers", async () => {
    const result = await cancel("--session", "s", "1");
    expect(result.code).toBe(3);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/runner/);
  });
});
