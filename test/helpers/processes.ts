import { afterAll } from "vitest";
import { type ConclaveProcess, spawnConclave } from "../../src/cli/childProcess.ts";
import { type PreviousRelease, spawnRelease } from "./previousRelease.ts";

/** Spawns `conclave` subprocesses against a test server; all are stopped after the file's tests. */
export function useConclaveProcesses(url: () => string, env: () => NodeJS.ProcessEnv = () => ({})) {
  const started: ConclaveProcess[] = [];
  afterAll(async () => {
    await Promise.allSettled(started.map((p) => p.stop(5_000)));
  });
  const environment = (extraEnv: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({
    ...process.env,
    ...env(),
    ...extraEnv,
    CONCLAVE_NATS_URL: url(),
    CONCLAVE_LOG: "quiet",
  });
  const track = async (p: ConclaveProcess): Promise<ConclaveProcess> => {
    started.push(p);
    await p.ready;
    return p;
  };
  return {
    /** Starts `conclave <args>`; `extraEnv` is added to (and overrides) the file's environment for this one. */
    async spawn(name: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<ConclaveProcess> {
      return track(spawnConclave(name, args, environment(extraEnv)));
    },
    /** Starts `conclave <args>` of a previous release (./previousRelease.ts), in the same environment. */
    async spawnRelease(
      release: PreviousRelease,
      name: string,
      args: string[],
      extraEnv: NodeJS.ProcessEnv = {},
    ): Promise<ConclaveProcess> {
      return track(spawnRelease(release, name, args, environment(extraEnv)));
    },
  };
}
