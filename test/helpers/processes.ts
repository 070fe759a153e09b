import { afterAll } from "vitest";
import { type ConclaveProcess, spawnConclave } from "../../src/cli/childProcess.ts";

/** Spawns `conclave` subprocesses against a test server; all are stopped after the file's tests. */
export function useConclaveProcesses(url: () => string, env: () => NodeJS.ProcessEnv = () => ({})) {
  const started: ConclaveProcess[] = [];
  afterAll(async () => {
    await Promise.allSettled(started.map((p) => p.stop(5_000)));
  });
  return {
    /** Starts `conclave <args>`; `extraEnv` is added to (and overrides) the file's environment for this one. */
    async spawn(name: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<ConclaveProcess> {
      const p = spawnConclave(name, args, {
        ...process.env,
        ...env(),
        ...extraEnv,
        CONCLAVE_NATS_URL: url(),
        CONCLAVE_LOG: "quiet",
      });
      started.push(p);
      await p.ready;
      return p;
    },
  };
}
