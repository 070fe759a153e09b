/**
 * The one place tests wait. Prefer, in this order: an event (`waitForEvent`,
 * `waitForMessage`, or `settledStatus` in ./turnStatus.ts, which follow what
 * the system publishes), then a poll of state only a poll can see (`until`,
 * `eventually`). `sleep` is for time that is the point of the test (a deadline
 * that must pass, simulated work), never to let something else happen first.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { eventStreamOfSubject } from "../../src/bus/subjects.ts";
import { decodeStoredEvents } from "../../src/contracts/eventBatch.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { ConclaveError } from "../../src/errors.ts";

export { sleep };

/** A wait gave up: what it waited for did not happen in time. */
export class WaitTimeoutError extends ConclaveError<"timeout"> {
  constructor(what: string, timeoutMs: number, detail?: string) {
    super("timeout", `${what}: not within ${timeoutMs} ms${detail ? ` (${detail})` : ""}`);
  }
}

export interface PollOptions {
  /** Give up after this long. Default 5 s. */
  timeoutMs?: number;
  /** Time between two probes. Default 20 ms. */
  everyMs?: number;
}

/** Polls `check` until it holds; throws a WaitTimeoutError naming `what` after `timeoutMs`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  { timeoutMs = 5_000, everyMs = 20, what = "condition" }: PollOptions & { what?: string } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new WaitTimeoutError(what, timeoutMs);
    await sleep(everyMs);
  }
}

/**
 * Polls `probe` until `done` accepts its value and returns that value; after
 * `timeoutMs` it returns the last value seen, for the caller to assert on (so
 * the failure shows the value, not just "timed out").
 */
export async function eventually<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  { timeoutMs = 5_000, everyMs = 100 }: PollOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await probe();
  while (!done(last)) {
    if (Date.now() > deadline) return last;
    await sleep(everyMs);
    last = await probe();
  }
  return last;
}

export interface EventWaitOptions {
  /** Give up after this long. Default 30 s. */
  timeoutMs?: number;
  /**
   * `start` (default): every event stored under the filter, then live ones.
   * `now`: only events stored once the consumer exists (shortly after the
   * call): to catch something fresh in a system already running, not an event
   * the caller's next action causes (use `start` for that).
   */
  from?: "start" | "now";
}

/**
 * Follows the event log (JetStream, the stream of each filter: `eventStreamOfSubject`) under `filter`,
 * e.g. `subjects.turnEvents(session, turn, count)`, or under each of several filters at once (sessions
 * whose events may be in different streams), and resolves with the first event `match` accepts.
 * Throws a WaitTimeoutError after `timeoutMs`, naming the last event kinds seen.
 */
export async function waitForEvent<E extends EngineEvent = EngineEvent>(
  nc: NatsConnection,
  filter: string | readonly string[],
  match: (event: EngineEvent) => event is E,
  options?: EventWaitOptions,
): Promise<E>;
export async function waitForEvent(
  nc: NatsConnection,
  filter: string | readonly string[],
  match: (event: EngineEvent) => boolean,
  options?: EventWaitOptions,
): Promise<EngineEvent>;
export async function waitForEvent(
  nc: NatsConnection,
  filter: string | readonly string[],
  match: (event: EngineEvent) => boolean,
  { timeoutMs = 30_000, from = "start" }: EventWaitOptions = {},
): Promise<EngineEvent> {
  const filters = typeof filter === "string" ? [filter] : [...filter];
  // One consumer per filter: nats-server 2.9 takes one filter subject per consumer.
  const consumers = await Promise.all(
    filters.map((subject) =>
      jetstream(nc).consumers.get(eventStreamOfSubject(subject), {
        filter_subjects: subject,
        deliver_policy: from === "now" ? DeliverPolicy.New : DeliverPolicy.All,
      }),
    ),
  );
  const all = await Promise.all(consumers.map((consumer) => consumer.consume()));
  const stopAll = () => {
    for (const messages of all) void messages.stop();
  };
  const timer = setTimeout(stopAll, timeoutMs);
  const seen: string[] = [];
  let found: EngineEvent | undefined;
  try {
    await Promise.all(
      all.map(async (messages) => {
        for await (const msg of messages) {
          if (found) break;
          // Not JSON, or no valid event: nothing anyone waits for. A batch holds several.
          for (const event of decodeStoredEvents(msg.data, msg.subject).events) {
            if (match(event)) {
              found = event;
              break;
            }
            seen.push(`${event.session_id}/${event.turn_id} ${event.kind}`);
          }
          if (found) {
            stopAll();
            break;
          }
        }
      }),
    );
  } finally {
    clearTimeout(timer);
    await Promise.all(all.map((messages) => messages.close()));
  }
  if (found) return found;
  throw new WaitTimeoutError(
    `an event on ${filters.join(", ")}`,
    timeoutMs,
    `last seen: ${seen.slice(-5).join(", ") || "none"}`,
  );
}

/**
 * Resolves with the first core-NATS message on `sub` that `match` accepts
 * (subscribe, and flush, before causing it). Unsubscribes either way; throws a
 * WaitTimeoutError after `timeoutMs`.
 */
export async function waitForMessage<T>(
  sub: Subscription,
  parse: (data: unknown) => T,
  { timeoutMs = 5_000, match = () => true }: { timeoutMs?: number; match?: (value: T) => boolean } = {},
): Promise<T> {
  const timer = setTimeout(() => sub.unsubscribe(), timeoutMs);
  try {
    for await (const msg of sub) {
      const value = parse(msg.json());
      if (match(value)) return value;
    }
  } finally {
    clearTimeout(timer);
    sub.unsubscribe();
  }
  throw new WaitTimeoutError(`a message on ${sub.getSubject()}`, timeoutMs);
}
