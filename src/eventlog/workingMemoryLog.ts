/**
 * Reading a session's working memory from its event log: the memory is the
 * last WORKING_MEMORY_UPDATED of the session's turns (it lives nowhere else,
 * so an erase of the log erases it). A reader that read the log up to a
 * position reads on from there.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { isStreamNotFound } from "../bus/errors.ts";
import { eventStreamOfSubject } from "../bus/subjects.ts";
import { eventStreamCount } from "./eventStreams.ts";
import { type LoggedEvent, rangeFilter, scanEvents } from "./query.ts";

/** The last working memory update found, and how far the log was read. */
export interface WorkingMemoryRead {
  /** The session's last WORKING_MEMORY_UPDATED after the position read from; null: none there. */
  last: (LoggedEvent & { event: { kind: "WORKING_MEMORY_UPDATED" } }) | null;
  /** The event stream's last position when it was read: the next read starts after it. */
  through: number;
}

/**
 * The session's last working memory update stored after position `after`
 * (0: the whole log), read once through the log's end as it stands now.
 */
export async function readWorkingMemory(
  nc: NatsConnection,
  sessionId: string,
  after = 0,
  signal?: AbortSignal,
): Promise<WorkingMemoryRead> {
  const jsm = await jetstreamManager(nc);
  const stream = eventStreamOfSubject(rangeFilter(sessionId, await eventStreamCount(jsm)));
  let through: number;
  try {
    through = (await jsm.streams.info(stream)).state.last_seq;
  } catch (error) {
    if (isStreamNotFound(error)) return { last: null, through: after };
    throw error;
  }
  let last: WorkingMemoryRead["last"] = null;
  if (through > after)
    await scanEvents(
      nc,
      sessionId,
      { kinds: ["WORKING_MEMORY_UPDATED"], fromSeq: after + 1, toSeq: through },
      (logged) => {
        if (logged.event.kind === "WORKING_MEMORY_UPDATED") last = logged as NonNullable<WorkingMemoryRead["last"]>;
        return true;
      },
      signal,
    );
  return { last, through: Math.max(through, after) };
}
