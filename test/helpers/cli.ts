import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";

/** What a `conclave` command did: its exit status and output. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the `conclave` CLI (the compiled bin) against the NATS server at `natsUrl`, quietly logged. */
export async function runConclave(natsUrl: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CONCLAVE_BIN, ...args], {
      env: { ...process.env, CONCLAVE_NATS_URL: natsUrl, CONCLAVE_LOG: "quiet", ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
