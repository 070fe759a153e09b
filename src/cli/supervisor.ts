import { type ConclaveProcess, spawnConclave } from "./childProcess.ts";

export interface SupervisorOptions {
  /** Restart intensity: more than this many restarts within `withinMs` and the process is given up. Default 5. */
  maxRestarts: number;
  /** Default 60 s. */
  withinMs: number;
  /** First restart delay, doubled for each recent restart, capped at 5 s. Default 250 ms. */
  backoffMs: number;
  log: (line: string) => void;
}

export const defaultSupervisorOptions: Omit<SupervisorOptions, "log"> = {
  maxRestarts: 5,
  withinMs: 60_000,
  backoffMs: 250,
};

/** A `conclave` subprocess kept running: restarted with backoff when it dies, until the restart intensity is exceeded. */
export interface SupervisedProcess {
  readonly name: string;
  /** The process running now. */
  readonly current: ConclaveProcess;
  /** Restarts so far. */
  readonly restarts: number;
  stop(graceMs?: number): Promise<void>;
}

/**
 * Supervises one child, as an OTP supervisor's one-for-one strategy does:
 * an unexpected exit restarts it after a backoff; too many restarts in the
 * window and it is left down, and said so.
 */
export function supervise(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: Partial<SupervisorOptions> & Pick<SupervisorOptions, "log">,
): SupervisedProcess {
  const settings = { ...defaultSupervisorOptions, ...options };
  let stopping = false;
  let current = spawnConclave(name, args, env);
  const restartTimes: number[] = [];
  let pending: NodeJS.Timeout | undefined;

  const watch = (child: ConclaveProcess) => {
    child.child.once("exit", (code, signal) => {
      if (stopping) return;
      const now = Date.now();
      while (restartTimes.length > 0 && now - restartTimes[0]! > settings.withinMs) restartTimes.shift();
      if (restartTimes.length >= settings.maxRestarts) {
        settings.log(
          `${name} exited (${signal ?? `code ${code}`}); ${restartTimes.length} restarts in ${settings.withinMs / 1000} s: giving up on it`,
        );
        return;
      }
      const delay = Math.min(settings.backoffMs * 2 ** restartTimes.length, 5_000);
      restartTimes.push(now);
      settings.log(`${name} exited (${signal ?? `code ${code}`}): restarting in ${delay} ms`);
      pending = setTimeout(() => {
        if (stopping) return;
        current = spawnConclave(name, args, env);
        watch(current);
        current.ready.then(
          () => settings.log(`${name} restarted (pid ${current.child.pid})`),
          (error: unknown) => settings.log(`${name} failed to restart: ${String(error)}`),
        );
      }, delay);
    });
  };
  watch(current);

  return {
    name,
    get current() {
      return current;
    },
    get restarts() {
      return restartTimes.length;
    },
    stop: async (graceMs) => {
      stopping = true;
      clearTimeout(pending);
      await current.stop(graceMs);
    },
  };
}
