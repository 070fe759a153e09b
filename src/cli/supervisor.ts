import { backoffMs } from "../deadline.ts";
import { type ConclaveProcess, spawnConclave } from "./childProcess.ts";

export interface SupervisorOptions {
  /** Restarts within this window count towards the backoff; a child that stays up longer starts again from `backoffMs`. Default 60 s. */
  withinMs: number;
  /** First restart delay, doubled for each recent restart. Default 250 ms. */
  backoffMs: number;
  /** Longest delay between two restarts: the supervisor never gives up, it waits at most this long. Default 30 s. */
  maxBackoffMs: number;
  log: (line: string) => void;
  /** How the child is started (default: spawnConclave); tests supervise a small script instead. */
  spawn: (name: string, args: string[], env: NodeJS.ProcessEnv) => ConclaveProcess;
}

export const defaultSupervisorOptions: Omit<SupervisorOptions, "log"> = {
  withinMs: 60_000,
  backoffMs: 250,
  maxBackoffMs: 30_000,
  spawn: (name, args, env) => spawnConclave(name, args, env),
};

/** A `conclave` subprocess kept running: restarted with capped backoff whenever it dies, for as long as it is supervised. */
export interface SupervisedProcess {
  readonly name: string;
  /** The process running now. */
  readonly current: ConclaveProcess;
  /** Restarts so far. */
  readonly restarts: number;
  stop(graceMs?: number): Promise<void>;
}

/**
 * Supervises one child, as an OTP supervisor's one-for-one strategy does,
 * except that it never gives up: a process left down for good turns one bad
 * input into an outage. Each unexpected exit restarts it after a backoff that
 * doubles with every restart in the last `withinMs`, capped at
 * `maxBackoffMs`; every restart is logged, and so is reaching the cap.
 */
export function supervise(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: Partial<SupervisorOptions> & Pick<SupervisorOptions, "log">,
): SupervisedProcess {
  const settings = { ...defaultSupervisorOptions, ...options };
  let stopping = false;
  let current = settings.spawn(name, args, env);
  const recent: number[] = [];
  let restarts = 0;
  let pending: NodeJS.Timeout | undefined;

  const watch = (child: ConclaveProcess) => {
    child.child.once("exit", (code, signal) => {
      if (stopping) return;
      const now = Date.now();
      while (recent.length > 0 && now - recent[0]! > settings.withinMs) recent.shift();
      const delay = backoffMs(recent.length, { baseMs: settings.backoffMs, maxMs: settings.maxBackoffMs });
      recent.push(now);
      restarts += 1;
      const how = signal ?? `code ${code}`;
      settings.log(
        delay >= settings.maxBackoffMs
          ? `${name} exited (${how}); ${recent.length} restarts in ${settings.withinMs / 1000} s: in long backoff, restarting in ${delay} ms and still trying`
          : `${name} exited (${how}): restarting in ${delay} ms (restart ${restarts})`,
      );
      pending = setTimeout(() => {
        if (stopping) return;
        current = settings.spawn(name, args, env);
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
      return restarts;
    },
    stop: async (graceMs) => {
      stopping = true;
      clearTimeout(pending);
      await current.stop(graceMs);
    },
  };
}
