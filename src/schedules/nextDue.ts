import { Cron } from "croner";
import { ConclaveError } from "../errors.ts";
import type { IntentWhen } from "./intent.ts";

/** A schedule whose `when` cannot be computed (a bad cron expression or time zone). Code `invalid_request`. */
export class InvalidScheduleError extends ConclaveError<"invalid_request"> {
  constructor(message: string) {
    super("invalid_request", message);
  }
}

/** Most missed due times counted one by one for a cron schedule; past it they are counted as one more batch. */
const MAX_ENUMERATED = 10_000;

function cronOf(when: Extract<IntentWhen, { cron: string }>): Cron {
  try {
    new Intl.DateTimeFormat("en", { timeZone: when.tz ?? "UTC" }); // throws a RangeError for a zone that is none
    // paused: croner only computes times here; the firing loop keeps its own single timer.
    return new Cron(when.cron, { timezone: when.tz ?? "UTC", paused: true });
  } catch (error) {
    throw new InvalidScheduleError(
      `bad cron ${JSON.stringify(when.cron)}${when.tz ? ` in ${when.tz}` : ""}: ${(error as Error).message}`,
    );
  }
}

/** Throws InvalidScheduleError for a cron expression or time zone croner refuses. */
export function checkWhen(when: IntentWhen): void {
  if ("cron" in when) {
    const cron = cronOf(when);
    if (cron.nextRun(new Date(when.start_ms ?? Date.now())) === null)
      throw new InvalidScheduleError(`cron ${JSON.stringify(when.cron)} is never due`);
  }
}

/** Where a schedule's due times start when it has fired nothing yet: its `start_ms`, else when it was created. */
export function firstAnchor(when: IntentWhen, createdAt: number): number {
  if ("at" in when) return Number.NEGATIVE_INFINITY;
  return when.start_ms ?? createdAt;
}

/** The first due time strictly after `after`, or null when there is none (an `at` already past it). */
export function nextDueAfter(when: IntentWhen, after: number): number | null {
  if ("at" in when) return when.at > after ? when.at : null;
  if ("every_ms" in when) {
    const start = when.start_ms ?? after;
    if (after < start) return start + when.every_ms;
    return start + (Math.floor((after - start) / when.every_ms) + 1) * when.every_ms;
  }
  const next = cronOf(when).nextRun(new Date(after));
  return next ? next.getTime() : null;
}

/** The due times in (after, until]: the first `keep` to fire, the rest deferred (a count and their span). */
export interface DueTimes {
  fire: number[];
  deferred: { count: number; first: number; last: number } | null;
}

/** Splits the due times in (after, until] into those to fire (the earliest `keep`) and those deferred. */
export function dueTimesBetween(when: IntentWhen, after: number, until: number, keep: number): DueTimes {
  const fire: number[] = [];
  if ("every_ms" in when && when.start_ms !== undefined) {
    // Arithmetic, so a long downtime with a short interval costs nothing to count.
    const first = nextDueAfter(when, after);
    if (first === null || first > until) return { fire, deferred: null };
    const count = Math.floor((until - first) / when.every_ms) + 1;
    for (let index = 0; index < Math.min(keep, count); index += 1) fire.push(first + index * when.every_ms);
    if (count <= keep) return { fire, deferred: null };
    return {
      fire,
      deferred: {
        count: count - keep,
        first: first + keep * when.every_ms,
        last: first + (count - 1) * when.every_ms,
      },
    };
  }
  let deferred = null as DueTimes["deferred"];
  let cursor = after;
  for (let seen = 0; seen < MAX_ENUMERATED; seen += 1) {
    const due = nextDueAfter(when, cursor);
    if (due === null || due > until) break;
    if (fire.length < keep) fire.push(due);
    else
      deferred = deferred ? { ...deferred, count: deferred.count + 1, last: due } : { count: 1, first: due, last: due };
    cursor = due;
  }
  return { fire, deferred };
}
