import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { z } from "zod";
import { decodeJson, encodeJson } from "../../bus/codec.ts";
import { asHandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { subjects } from "../../bus/subjects.ts";
import { addressOf } from "../../bus/tenancy.ts";
import { decodeMessage, respondJson } from "../../bus/wire.ts";
import { type EngineEvent, LiveChunk } from "../../contracts/events.ts";
import { TurnId } from "../../contracts/ids.ts";
import { WatchId, WatchRenewal } from "../../contracts/watch.ts";
import { deadlineSignal } from "../../deadline.ts";
import { singleLine } from "../../errors.ts";
import { eventStreamCount } from "../../eventlog/eventStreams.ts";
import { rangeFilter } from "../../eventlog/query.ts";
import { followEvents, readEvents } from "../../eventlog/reader.ts";
import type { Logger } from "../../telemetry/log.ts";
import { isRenewal, type WatchLease, WatchLeases, watchLimitsFrom } from "./watchLeases.ts";

/** A request to read a session's events through the runner (`conclave.turn.watch.<session>`). Every field is optional. */
export const WatchRequest = z.object({
  /** One turn's events; default: every turn of the session. */
  turn_id: TurnId.optional(),
  /**
   * Go on with live events after the stored ones: until the turn's
   * `TURN_COMPLETED` when `turn_id` is given, else until `timeout_ms`.
   * Default true with `turn_id`, false without.
   */
  follow: z.boolean().optional(),
  /**
   * Following one turn, send its stream chunks live too, one by one as they are made (LiveChunk, naming a
   * `writer`), among its stored events, which hold them coalesced: the requester merges the two (the client's
   * LiveChunkMerger). Default false: stored events only, as older clients expect.
   */
  live: z.boolean().optional(),
  /**
   * The requester's name for a follow-watch, which it renews by publishing `{ "renew": "<watch_id>" }` on the
   * same subject every 5 s; the runner ends a follow-watch not renewed within `CONCLAVE_WATCH_KEEPALIVE_MS`
   * (one without a `watch_id` cannot be renewed, so it lasts that long at most).
   */
  watch_id: WatchId.optional(),
  /** Longest the exchange may last. Default 60 000, at most 300 000. */
  timeout_ms: z.number().int().min(100).max(300_000).default(60_000),
});
export type WatchRequest = z.infer<typeof WatchRequest>;

/**
 * Largest accepted watch request, in bytes: its four fields fit in well
 * under 100; anything near this is not a watch request (the other public
 * subjects stop at 64 KiB or less, see MAX_SUBMISSION_BYTES).
 */
export const MAX_WATCH_BYTES = 4_096;

export interface WatchDeps {
  js: JetStreamClient;
  /** The connection `js` uses: a follow picks up again after it reconnects. */
  nc?: NatsConnection;
  jsm: JetStreamManager;
  log: Logger;
  /** The follow-watches this runner holds; default: one set per deps, with the environment's limits. */
  leases?: WatchLeases;
}

/** Each runner's follow-watches, made on its first one when its deps bring none. */
const leasesByDeps = new WeakMap<WatchDeps, WatchLeases>();

function leasesOf(deps: WatchDeps): WatchLeases {
  if (deps.leases) return deps.leases;
  const made = leasesByDeps.get(deps) ?? new WatchLeases(watchLimitsFrom());
  leasesByDeps.set(deps, made);
  return made;
}

/**
 * Serves a session's events to whoever asked for them, as a stream of
 * replies (one `EngineEvent` each, then an empty message that ends the
 * exchange — `requestMany` with the sentinel strategy). This is how a tenant,
 * whose account has no JetStream, reads its sessions: only its own, since its
 * account's import puts its name in the subject. Events show the session id
 * as the requester knows it. Following one turn with `live`, its stream
 * chunks come live too (LiveChunk), among its stored events. A follow-watch
 * is capped per tenant and per session (a `busy` error over the cap) and
 * ends, its consumer deleted, once its requester stops renewing it
 * (watchLeases.ts).
 */
export async function serveWatch(deps: WatchDeps, msg: ServiceMsg): Promise<void> {
  if (!isInboxReply(msg.reply, "runner")) return; // a stream of events goes nowhere but to a requester
  try {
    const { tenant, sessionId, view } = addressOf(msg.subject);
    if (msg.data.length <= MAX_WATCH_BYTES && isRenewal(msg.data)) {
      msg.respond(new Uint8Array()); // a renewal sent as a request: the runner serving the watch heard it too
      return;
    }
    const request =
      msg.data.length === 0
        ? WatchRequest.parse({})
        : decodeMessage(msg, WatchRequest, `watch of session ${view}`, MAX_WATCH_BYTES);
    const follow = request.follow ?? request.turn_id !== undefined;
    const filter = rangeFilter(sessionId, await eventStreamCount(deps.jsm), request.turn_id);
    const send = (event: EngineEvent) => respondJson(msg, { ...event, session_id: view });
    if (!follow) {
      for (const event of await readEvents(deps.js, deps.jsm, sessionId, request.turn_id)) send(event);
    } else {
      const lease = leasesOf(deps).open(tenant, sessionId);
      const renewals = deps.nc ? listenForRenewals(deps.nc, msg.subject, request.watch_id, lease) : null;
      const abort = deadlineSignal(request.timeout_ms, lease.signal);
      // A turn's live chunks go along with its stored events (the requester merges them, see LiveChunkMerger).
      const live =
        request.live && request.turn_id !== undefined && deps.nc
          ? relayLiveChunks(deps.nc, sessionId, request.turn_id, view, (data) => msg.respond(data))
          : null;
      try {
        await followEvents(
          deps.js,
          filter,
          (event) => {
            send(event);
            return request.turn_id !== undefined && event.kind === "TURN_COMPLETED";
          },
          { signal: abort, ...(deps.nc ? { connection: deps.nc } : {}) },
        );
      } finally {
        lease.close();
        renewals?.unsubscribe();
        live?.unsubscribe();
      }
    }
    msg.respond(new Uint8Array());
  } catch (error) {
    const failure = asHandlerError(error);
    deps.log.warn(`watch on ${msg.subject}: ${singleLine(failure.message)}`);
    respondWithError(msg, failure);
    try {
      msg.respond(new Uint8Array());
    } catch {
      // The requester is gone.
    }
  }
}

/**
 * Renews `lease` on each renewal naming `watchId` published on the watch's
 * subject. Its own subscription, outside the runners' queue group: a renewal
 * reaches every runner listening, so the one serving the watch hears it
 * whichever runner the queue picks (that one ignores it: it wants no reply).
 */
function listenForRenewals(
  nc: NatsConnection,
  subject: string,
  watchId: string | undefined,
  lease: WatchLease,
): Subscription | null {
  if (watchId === undefined) return null;
  try {
    return nc.subscribe(subject, {
      callback: (error, renewal) => {
        if (error || renewal.data.length > MAX_WATCH_BYTES) return;
        try {
          if (decodeJson(renewal.data, WatchRenewal, "watch renewal").renew === watchId) lease.renew();
        } catch {
          // A watch request, or not a renewal: not this listener's business.
        }
      },
    });
  } catch {
    return null; // the connection is closing: the follow reports it
  }
}

/** Sends a turn's live chunks (`conclave.live.<session>.<turn>`) on to a watcher, its session id as it knows it. */
function relayLiveChunks(
  nc: NatsConnection,
  sessionId: string,
  turnId: number,
  view: string,
  send: (data: Uint8Array) => void,
): Subscription | null {
  try {
    return nc.subscribe(subjects.liveChunks(sessionId, turnId), {
      callback: (error, live) => {
        if (error) return;
        try {
          send(encodeJson({ ...decodeMessage(live, LiveChunk, "live chunk"), session_id: view }));
        } catch {
          // Not a live chunk, or the watcher is gone: the log has the turn's chunks.
        }
      },
    });
  } catch {
    return null; // the connection is closing: the follow reports it
  }
}
