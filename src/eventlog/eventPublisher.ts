import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { headers as createHeaders, type MsgHdrs } from "@nats-io/nats-core";
import { type InboxRequests, jetStreamPublish } from "../bus/inboxRequests.ts";
import { subjects } from "../bus/subjects.ts";
import { EVENT_COUNT_HEADER } from "../contracts/eventBatch.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { turnKey } from "../contracts/turnKey.ts";
import { backoffMs, pause } from "../deadline.ts";

/** How long one publish waits for its acknowledgement before it is tried again. */
const PUBLISH_TIMEOUT_MS = 5_000;

/** Another writer stored the turn's subject past what this one expected: it holds the turn. */
export const isWrongLastSequence = (error: unknown): boolean =>
  error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence;

/**
 * Stores one event of a turn, or a batch of them, in the event stream, under the
 * message id `<session>.<turn>.<seq>` of its (first) event (a retry is stored once), over the connection's own
 * reply inbox when given one (`requests`), else with `js.publish`. The order of
 * a turn's events and its fencing are the writer's (`writer.ts`, `turnFencing.ts`).
 */
export class EventPublisher {
  constructor(
    private readonly js: JetStreamClient,
    /** The event log's stream count: which stream each session's events go to. */
    private readonly eventStreams: number,
    private readonly requests: InboxRequests | null,
    /** How long `storeWithRetry` keeps trying, across a NATS restart. */
    private readonly storeTimeoutMs: number,
  ) {}

  /**
   * One publish of `data`: the event alone, or a batch of `count` events starting with it (under the
   * first one's message id, its count in the `Conclave-Events` header). `expectLast` fences on the
   * subject's last stream sequence.
   */
  publish(event: EngineEvent, data: Uint8Array, expectLast?: number, count = 1): Promise<PubAck> {
    const subject = subjects.turnEvents(event.session_id, event.turn_id, this.eventStreams);
    const msgID = `${turnKey(event.session_id, event.turn_id)}.${event.seq}`;
    if (this.requests)
      return jetStreamPublish(this.requests, subject, data, {
        msgID,
        timeoutMs: PUBLISH_TIMEOUT_MS,
        ...(expectLast === undefined ? {} : { expectLastSubjectSequence: expectLast }),
        ...(count > 1 ? { headers: { [EVENT_COUNT_HEADER]: String(count) } } : {}),
      });
    let headers: MsgHdrs | undefined;
    if (count > 1) {
      headers = createHeaders();
      headers.set(EVENT_COUNT_HEADER, String(count));
    }
    return this.js.publish(subject, data, {
      msgID,
      timeout: PUBLISH_TIMEOUT_MS,
      ...(expectLast === undefined ? {} : { expect: { lastSubjectSequence: expectLast } }),
      ...(headers ? { headers } : {}),
    });
  }

  /** Publishes again (as `publish`) until it is stored (a duplicate is stored), fenced, or the store timeout passes. */
  async storeWithRetry(event: EngineEvent, data: Uint8Array, expectLast?: number, count = 1): Promise<PubAck> {
    const deadline = Date.now() + this.storeTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.publish(event, data, expectLast, count);
      } catch (error) {
        if (isWrongLastSequence(error) || Date.now() >= deadline) throw error;
        await pause(backoffMs(attempt, { baseMs: 100, maxMs: 2_000 }));
      }
    }
  }
}
