import { hostname } from "node:os";
import type { NatsConnection } from "@nats-io/nats-core";
import { type BusOptions, busOptions, connectBus } from "../bus/connection.ts";
import { Runner, type RunnerOptions } from "./runner/runner.ts";

/** What `startRunner` takes: the runner's options, and how it connects. */
export interface StartRunnerOptions extends RunnerOptions {
  /** A connection to use (the runner does not close it). Default: one opened with `connection`. */
  nc?: NatsConnection;
  /**
   * How to connect when no `nc` is given, as the `runner` role: servers, TLS,
   * user and password, nkey or creds file (as `connect` takes them). Defaults from
   * the environment (`CONCLAVE_NATS_URL`, …), else nats://127.0.0.1:4222 with
   * the development credentials of nats.conf. The connection waits for the
   * server and reconnects forever, as a long-lived process should.
   */
  connection?: Partial<BusOptions>;
}

/** A running runner. */
export interface RunnerHandle {
  /** This runner's name in leases and turn status. */
  readonly id: string;
  /**
   * Stops taking turns, lets running ones finish (up to `timeoutMs`, default
   * 30 s; unfinished ones are taken over by another runner), and closes the
   * connection it opened.
   */
  stop(timeoutMs?: number): Promise<void>;
}

/**
 * Starts a runner: it accepts turns on `conclave.turn.submit.<session>`,
 * writes them to the durable turn WAL, runs each session's turns in order
 * through the workers, and records every turn's events in the event log.
 * Run as many as you like: they share the work, one runner per session at a
 * time, and take over the turns of a runner that dies.
 *
 * @example
 * ```ts
 * const runner = await startRunner({ connection: { servers: "nats://127.0.0.1:4222" } });
 * // … until shutdown:
 * await runner.stop();
 * ```
 */
export async function startRunner(options: StartRunnerOptions = {}): Promise<RunnerHandle> {
  const { nc: given, connection, ...runnerOptions } = options;
  const id = runnerOptions.id ?? `${hostname()}:${process.pid}`;
  const bus = given ? undefined : busOptions("runner", { persistent: true, ...connection });
  const nc = given ?? (await connectBus(bus as BusOptions));
  try {
    const runner = await Runner.start(nc, { ...(bus ? { heartbeat: bus } : {}), ...runnerOptions, id });
    return {
      id,
      stop: async (timeoutMs) => {
        await runner.stop(timeoutMs);
        if (!given) await nc.drain();
      },
    };
  } catch (error) {
    if (!given) await nc.close();
    throw error;
  }
}
