import { afterAll } from "vitest";
import { type ConclaveProcess, spawnConclave } from "../../src/cli/childProcess.ts";
import { type ConclaveBuild, type LoggedProblem, spawnBuild } from "./previousRelease.ts";

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
    CONCLAVE_LOG: process.env.CONCLAVE_TEST_PROCESS_LOG ?? "quiet",
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
    /**
     * Starts `conclave <args>` of `build` (a previous release, or the current code: ./previousRelease.ts)
     * in the same environment; each warning or error it logs is also given to `onProblem`.
     */
    async spawnBuild(
      build: ConclaveBuild,
      name: string,
      args: string[],
      onProblem?: (problem: LoggedProblem) => void,
    ): Promise<ConclaveProcess> {
      return track(spawnBuild(build, name, args, environment({}), onProblem));
    },
  };
}
