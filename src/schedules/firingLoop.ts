import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import type { Service, ServiceGroup } from "../bus/service.ts";
import type { TurnAck, TurnSubmission } from "../contracts/turn.ts";
import { MAX_TIMER_MS } from "../deadline.ts";
import { messageOf } from "../errors.ts";
import { followRun } from "../eventlog/followRun.ts";
import { type Logger, silentLogger } from "../telemetry/log.ts";
import { conditionHolds } from "./convergence.ts";
import { foldScheduleEvent } from "./fold.ts";
import type { IntentState, ScheduleEvent } from "./intent.ts";
import { dueTimesBetween, firstAnchor, nextDueAfter } from "./nextDue.ts";
import { ScheduleLog } from "./scheduleLog.ts";
import { serveSchedules } from "./service.ts";

/** Patience for a fired run to complete before its convergence is judged (it is not judged after). */
const RUN_PATIENCE_MS = 30 * 60_000;

/** A runner's schedule firing loop. */
export interface ScheduleLoop {
  /** Stops the timer and the log's follow; fires already submitted go on. */
  stop(): Promise<void>;
}

/**
 * Submits a turn as a client would, through the intake's own acceptance, in
 * this process (the runner gives src/runtime/intake/localSubmit.ts).
 */
export type LocalSubmit = (sessionId: string, submission: z.input<typeof TurnSubmission>) => Promise<TurnAck>;

/** What the loop needs to know of the runner hosting it. */
export interface ScheduleLoopOptions {
  /** The runner's id, recorded in `fired` events and fire claims. */
  runner: string;
  log?: Logger;
  /** How a fired turn is submitted: the intake's acceptance, in-process (see localSubmit). */
  submit: LocalSubmit;
}

/**
 * The schedule firing loop a runner hosts. It folds the schedule log into the
 * current intents, keeps one timer to the earliest due time (nothing runs
 * while nothing is due), and at each due time claims the fire (KV
 * create-if-absent: one runner wins), submits the turn or recipe run through
 * the intake like a client, records `fired`, and once the run completes
 * checks the intent's convergence condition (`converged` stops it). Due
 * times missed while no runner was up are fired up to `catch_up_max`; the
 * rest are recorded as one `deferred` event.
 */
export async function startScheduleLoop(
  nc: NatsConnection,
  options: ScheduleLoopOptions,
  service: ServiceGroup,
): Promise<ScheduleLoop> {
  const log = options.log ?? silentLogger;
  const js = jetstream(nc);
  const scheduleLog = await ScheduleLog.open(nc, js, await jetstreamManager(nc));
  const intents = new Map<string, IntentState>();
  /** Due times this runner has handled per intent, ahead of the log (its own events come back a moment later). */
  const handledHere = new Map<string, number>();
  let seenSeq = 0;
  const seqWaiters = new Set<{ seq: number; resolve: () => void }>();
  const aborter = new AbortController();
  let timer: NodeJS.Timeout | null = null;
  let ready = false;

  const anchorOf = (state: IntentState): number =>
    Math.max(
      state.last_due ?? firstAnchor(state.intent.when, state.created_at),
      handledHere.get(state.intent.id) ?? -1,
    );
  const nextDueOf = (state: IntentState): number | null => {
    if (state.status !== "active") return null;
    try {
      return nextDueAfter(state.intent.when, anchorOf(state));
    } catch {
      return null; // a `when` refused at creation never gets here; one that does is never due
    }
  };

  const arm = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (!ready || aborter.signal.aborted) return;
    let earliest = Number.POSITIVE_INFINITY;
    for (const state of intents.values()) earliest = Math.min(earliest, nextDueOf(state) ?? Number.POSITIVE_INFINITY);
    if (earliest === Number.POSITIVE_INFINITY) return;
    timer = setTimeout(tick, Math.min(Math.max(earliest - Date.now(), 0), MAX_TIMER_MS));
    timer.unref();
  };

  const record = (event: ScheduleEvent) =>
    scheduleLog.append(event).catch((error: unknown) => {
      log.warn(`schedule event ${event.kind} not recorded: ${messageOf(error)}`);
      return 0;
    });

  const tick = () => {
    timer = null;
    const now = Date.now();
    for (const state of intents.values()) {
      if (state.status !== "active") continue;
      const { id } = state.intent;
      let due: ReturnType<typeof dueTimesBetween>;
      try {
        due = dueTimesBetween(state.intent.when, anchorOf(state), now, state.intent.catch_up_max);
      } catch (error) {
        log.warn(`schedule ${id} skipped: ${messageOf(error)}`);
        continue;
      }
      const last = Math.max(...due.fire, due.deferred?.last ?? Number.NEGATIVE_INFINITY);
      if (last === Number.NEGATIVE_INFINITY) continue;
      handledHere.set(id, last);
      const deferred = due.deferred;
      if (deferred)
        void scheduleLog.claim(`${id}.${deferred.last}.deferred`, options.runner).then((won) => {
          if (won) void record({ kind: "deferred", at: Date.now(), id, ...deferred });
        });
      void fireInOrder(state, due.fire);
    }
    arm();
  };

  const fireInOrder = async (state: IntentState, dues: number[]) => {
    for (const due of dues) {
      if (aborter.signal.aborted || state.status !== "active") return;
      const claimed = await scheduleLog.claim(`${state.intent.id}.${due}`, options.runner);
      // Cancelled or erased while claiming (its session's erase): nothing more is fired.
      if (claimed && state.status === "active") await fire(state, due);
    }
  };

  const fire = async (state: IntentState, due: number) => {
    const { intent } = state;
    const base = { at: Date.now(), id: intent.id, due, runner: options.runner };
    let turnId: number;
    try {
      const ack = await options.submit(intent.session_id, {
        ...("text" in intent.what ? { text: intent.what.text } : { recipe: intent.what.recipe }),
        // A resubmission of the same fire (a retry) runs nothing twice.
        idempotency_key: `schedule-${intent.id}-${due}`,
      });
      turnId = ack.turn_id;
    } catch (error) {
      await record({ kind: "fired", ...base, error: messageOf(error) });
      return;
    }
    await record({ kind: "fired", ...base, turn_id: turnId });
    if (!intent.convergence) return;
    const convergence = intent.convergence;
    void followRun(nc, intent.session_id, turnId, { timeoutMs: RUN_PATIENCE_MS })
      .then(async (result) => {
        if (result.status !== "completed") return;
        const facts = {
          outcome: result.outcome as { status: string } & Record<string, unknown>,
          blackboard: result.output,
          response: result.response,
          turn_id: turnId,
          fires: (intents.get(intent.id)?.fires ?? 0) || 1,
        };
        const current = intents.get(intent.id);
        if (conditionHolds(convergence, facts) && current?.status === "active") {
          // Stops this runner's next fires at once, not when its own `converged` comes back from the log.
          current.status = "converged";
          await record({ kind: "converged", at: Date.now(), id: intent.id, due, turn_id: turnId });
        }
      })
      .catch((error: unknown) => {
        if (!aborter.signal.aborted) log.warn(`schedule ${intent.id}: run ${turnId} not followed: ${messageOf(error)}`);
      });
  };

  let caughtUpTo = await scheduleLog.lastSeq();
  const following = scheduleLog.follow((event, seq) => {
    seenSeq = seq;
    if (event) foldScheduleEvent(intents, event);
    // A new `when` counts its due times afresh here too.
    if (event?.kind === "updated" && event.patch.when) handledHere.delete(event.id);
    for (const waiter of seqWaiters)
      if (waiter.seq <= seq) {
        seqWaiters.delete(waiter);
        waiter.resolve();
      }
    if (ready) arm();
    else if (seq >= caughtUpTo) {
      ready = true;
      arm();
    }
  }, aborter.signal);
  following.catch((error: unknown) => {
    if (!aborter.signal.aborted) log.error(`schedule log no longer followed: ${messageOf(error)}`);
  });
  if (caughtUpTo === 0) {
    ready = true;
    caughtUpTo = -1;
  }

  /** Resolves once the fold has seen the log up to `seq`. */
  const seen = (seq: number) =>
    seq <= seenSeq ? Promise.resolve() : new Promise<void>((resolve) => seqWaiters.add({ seq, resolve }));

  serveSchedules(service, {
    log: scheduleLog,
    intents,
    seen,
    nextDue: nextDueOf,
    logger: log,
  });
  return {
    stop: async () => {
      aborter.abort();
      if (timer) clearTimeout(timer);
      await following.catch(() => {});
    },
  };
}

/**
 * Starts the schedule loop on a runner, its request endpoint on the runner's
 * `service`, and returns that service, whose `stop` stops the loop first:
 * the one hook a runner needs (src/runtime/runner/parts.ts).
 */
export async function hostSchedules(
  nc: NatsConnection,
  options: ScheduleLoopOptions,
  service: Service,
): Promise<Service> {
  const loop = await startScheduleLoop(nc, options, service);
  return {
    name: service.name,
    id: service.id,
    addEndpoint: (name, endpoint) => service.addEndpoint(name, endpoint),
    stop: async () => {
      await loop.stop();
      await service.stop();
    },
  };
}
