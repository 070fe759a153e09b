/**
 * Failpoints: named places where a process can be made to die on purpose, so
 * crash tests stop a runner exactly between two steps (after a key is
 * reserved, after the WAL write) instead of guessing with sleeps — the
 * technique of FoundationDB's buggify and TiKV's fail-rs.
 *
 * Off unless `CONCLAVE_FAILPOINTS` names them (comma-separated), which only
 * tests do; with none named, `failpoint()` is one Set lookup on an empty set.
 *
 *   CONCLAVE_FAILPOINTS=ingress.after_reserve   the process kills itself (SIGKILL) there
 *
 * A few are faults, not deaths (`failpointArmed`): the caller acts the fault out where it is armed.
 */
import { setting } from "../config/load.ts";

const armed = new Set(setting(process.env, "CONCLAVE_FAILPOINTS") ?? []);

/** Every failpoint the code has, so a test naming a wrong one fails loudly. */
export const FAILPOINTS = [
  /** The ingress reserved the idempotency key (and the turn id), before the WAL write. */
  "ingress.after_reserve",
  /** The turn is stored in the WAL, before the key is marked accepted and the ack is sent. */
  "ingress.after_wal",
  /**
   * Not a death: a new turn's WAL write lands but its answer is lost, as in a JetStream election that
   * outlasts the intake's patience (the intake must not say "not stored"). A recovering retry is spared.
   */
  "ingress.wal_answer_lost",
  /** A pipeline turn is about to ask the voice for its first rendering, every earlier event of it stored. */
  "turn.before_voice",
  /** A pipeline turn is about to ask the critics to judge a re-rendering (attempt 2 or later), every earlier event stored. */
  "turn.before_critics_retry",
] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

for (const name of armed) {
  if (!(FAILPOINTS as readonly string[]).includes(name)) {
    throw new Error(`CONCLAVE_FAILPOINTS names '${name}'; the failpoints are: ${FAILPOINTS.join(", ")}`);
  }
}

/** True when this failpoint is armed: a caller may make ready (store what must be stored) before dying there. */
export function failpointArmed(name: Failpoint): boolean {
  return armed.size > 0 && armed.has(name);
}

/** Dies here, at once and without cleanup (SIGKILL), when this failpoint is armed. */
export function failpoint(name: Failpoint): void {
  if (armed.size > 0 && armed.has(name)) process.kill(process.pid, "SIGKILL");
}
