import { jetstream } from "@nats-io/jetstream";
import { type NatsConnection, nuid } from "@nats-io/nats-core";
import { z } from "zod";
import { RemoteCallError } from "../bus/errors.ts";
import { requestJson, requestStream } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import { publishJson } from "../bus/wire.ts";
import { EngineEvent, LiveChunk } from "../contracts/events.ts";
import { TurnAck, type TurnSubmission } from "../contracts/turn.ts";
import { WATCH_RENEW_MS } from "../contracts/watch.ts";
import { deadlineSignal } from "../deadline.ts";
import { ConclaveError } from "../errors.ts";
import { TurnTimeoutError } from "../eventlog/followRun.ts";
import { followEvents } from "../eventlog/reader.ts";
import { submitInSpan } from "../telemetry/submitSpan.ts";
import { tracingActive } from "../telemetry/tracer.ts";
import { LiveChunkMerger, subscribeLiveChunks } from "./liveChunks.ts";

/** Raised for a turn that ended with outcome Failed (its TURN_COMPLETED names the error). */
export class TurnFailedError extends ConclaveError<"turn_failed"> {
  readonly sessionId: string;
  readonly turnId: number;
  /** The code the runner gave the failure. */
  readonly reason: string;
  constructor(sessionId: string, turnId: number, error: { code: string; message: string }) {
    super("turn_failed", `turn ${sessionId}/${turnId} failed: ${error.code}: ${error.message}`);
    this.sessionId = sessionId;
    this.turnId = turnId;
    this.reason = error.code;
  }
}

/**
 * Raised for a turn that suspended instead of completing: one of its agents' tool calls waits for
 * a person's approval. It goes on once answered (`client.approve` / `conclave approve <session>/<turn>`).
 */
export class TurnSuspendedError extends ConclaveError<"turn_suspended"> {
  readonly sessionId: string;
  readonly turnId: number;
  /** Where it waits (`agent:<id>` in the pipeline). */
  readonly node: string;
  constructor(sessionId: string, turnId: number, node: string, prompt?: string) {
    super(
      "turn_suspended",
      `turn ${sessionId}/${turnId} waits at ${node}${prompt ? `: ${prompt}` : ""}; answer it with conclave approve|deny ${sessionId}/${turnId}`,
    );
    this.sessionId = sessionId;
    this.turnId = turnId;
    this.node = node;
  }
}

/**
 * Submits a user turn and returns its ack. A RemoteCallError with code
 * `no_responders` means no runner is up; `invalid_request`/`bad_json` carry
 * the runner's explanation (the client's `submit` checks the session id
 * first; this sends whatever it is given). With a tracer provider registered
 * (`@opentelemetry/api`), it is sent in a `conclave.turn.submit` span whose
 * context the runner's turn span continues.
 */
export function submitTurn(
  nc: NatsConnection,
  sessionId: string,
  submission: z.input<typeof TurnSubmission>,
  timeoutMs = 5_000,
): Promise<TurnAck> {
  const subject = subjects.turnSubmit(sessionId);
  if (tracingActive())
    return submitInSpan(sessionId, (headers) => requestJson(nc, subject, submission, TurnAck, { timeoutMs, headers }));
  return requestJson(nc, subject, submission, TurnAck, { timeoutMs });
}

/**
 * Streams a turn's events (stored ones first, then live ones) until
 * TURN_COMPLETED, and returns that final event. Where it reads is the ack's
 * `events_subject`: the JetStream log itself for a client of the runtime's
 * account, a runner's `conclave.turn.watch.<session>` for a tenant (whose
 * account has no JetStream). Stream chunks come one by one as they are made
 * (the turn's live subject, or relayed by the runner), merged with the log's
 * coalesced ones so that each piece of text comes once (LiveChunkMerger): a
 * live chunk has the seq of the stored event that holds it. Throws
 * TurnTimeoutError when the turn does not complete within `timeoutMs`, and
 * TurnSuspendedError when it suspends for an approval instead.
 */
export async function watchTurn(
  nc: NatsConnection,
  ack: TurnAck,
  onEvent: (event: EngineEvent) => void,
  timeoutMs = 60_000,
): Promise<TurnCompleted> {
  const completed =
    ack.events_subject === subjects.turnWatch(ack.session_id)
      ? await watchThroughRunner(nc, ack, onEvent, timeoutMs)
      : await followLog(nc, ack, onEvent, timeoutMs);
  if (!completed) throw new TurnTimeoutError(ack.session_id, ack.turn_id, timeoutMs);
  return completed;
}

export type TurnCompleted = Extract<EngineEvent, { kind: "TURN_COMPLETED" }>;

async function followLog(
  nc: NatsConnection,
  ack: TurnAck,
  onEvent: (event: EngineEvent) => void,
  timeoutMs: number,
): Promise<TurnCompleted | null> {
  let completed: TurnCompleted | null = null;
  let suspended: string | null = null;
  let prompt: string | undefined;
  const merger = new LiveChunkMerger(onEvent);
  // Subscribed before the log is read: a chunk is then either live or stored by the time the log is caught up.
  const live = subscribeLiveChunks(nc, ack.session_id, ack.turn_id, merger);
  try {
    await followEvents(
      jetstream(nc),
      ack.events_subject,
      (event) => {
        merger.stored(event);
        if (event.kind === "HUMAN_INPUT_REQUESTED") prompt = event.payload.prompt;
        if (event.kind === "TURN_SUSPENDED") {
          suspended = event.payload.node;
          return true;
        }
        if (event.kind === "TURN_COMPLETED") {
          completed = event;
          return true;
        }
        return false;
      },
      { signal: deadlineSignal(timeoutMs), connection: nc },
    );
  } finally {
    live?.unsubscribe();
  }
  if (suspended !== null) throw new TurnSuspendedError(ack.session_id, ack.turn_id, suspended, prompt);
  return completed;
}

/** What a watch through a runner sends: stored events and, following a turn, its live chunks (they name a writer). */
const WatchedEvent = z.union([LiveChunk, EngineEvent]);

/** Extra time a watch through a runner may take over the runner's own deadline, for the last replies to arrive. */
const WATCH_SLACK_MS = 2_000;

async function watchThroughRunner(
  nc: NatsConnection,
  ack: TurnAck,
  onEvent: (event: EngineEvent) => void,
  timeoutMs: number,
): Promise<TurnCompleted | null> {
  let completed: TurnCompleted | null = null;
  const merger = new LiveChunkMerger(onEvent);
  // The runner ends a follow-watch nobody renews (its requester gone): renewed while this waits.
  const watchId = nuid.next();
  const renewals = setInterval(() => {
    try {
      publishJson(nc, ack.events_subject, { renew: watchId });
    } catch {
      // The connection is closing: the watch ends with it.
    }
  }, WATCH_RENEW_MS);
  await requestStream(
    nc,
    ack.events_subject,
    { turn_id: ack.turn_id, follow: true, timeout_ms: timeoutMs, live: true, watch_id: watchId },
    WatchedEvent,
    (message) => {
      // The runner relays the turn's live chunks among its stored events.
      if ("writer" in message) return merger.live(message);
      // The schema's inferred type is wider than EngineEvent's declared union; it validated the same shape.
      const event = message as EngineEvent;
      merger.stored(event);
      if (event.kind === "TURN_COMPLETED") completed = event;
    },
    { timeoutMs: timeoutMs + WATCH_SLACK_MS },
  )
    .catch((error: unknown) => {
      if (!(error instanceof RemoteCallError && error.code === "timeout")) throw error;
    })
    .finally(() => clearInterval(renewals));
  return completed;
}

/**
 * The stored events of a session (or of one turn), read through a runner
 * (`conclave.turn.watch.<session>`), without following: how a tenant reads
 * its history. Works for a client of the runtime's account too.
 */
export async function readThroughRunner(
  nc: NatsConnection,
  sessionId: string,
  options: { turnId?: number; timeoutMs?: number } = {},
): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  const timeoutMs = options.timeoutMs ?? 10_000;
  await requestStream(
    nc,
    subjects.turnWatch(sessionId),
    { ...(options.turnId === undefined ? {} : { turn_id: options.turnId }), follow: false, timeout_ms: timeoutMs },
    EngineEvent,
    (message) => events.push(message as EngineEvent),
    { timeoutMs: timeoutMs + WATCH_SLACK_MS },
  );
  return events;
}
