/**
 * A stream of A2A events as Server-Sent Events, the same for both bindings:
 * a stream that fails before its first event is answered as a plain error
 * (as the SDK's own servers do), a later failure as an `error` event, and a
 * client gone stops following the task.
 */
import type { ServerResponse } from "node:http";

/** How one binding writes a stream's events and failures. */
export interface SseBinding<T> {
  /** One event's `data`. */
  data(event: T): unknown;
  /** A failure's body (plain answer before the stream, `error` event after). */
  failure(error: unknown): { status: number; body: unknown };
  /** Answers a failure before the stream began. */
  answer(status: number, body: unknown): void;
  onError?: (error: unknown) => void;
}

/** Writes `events` to `response` as SSE. */
export async function writeSse<T>(
  response: ServerResponse,
  events: AsyncGenerator<T, void, undefined>,
  binding: SseBinding<T>,
): Promise<void> {
  let first: IteratorResult<T, void>;
  try {
    first = await events.next();
  } catch (error) {
    const { status, body } = binding.failure(error);
    return binding.answer(status, body);
  }
  response.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
    "x-content-type-options": "nosniff",
  });
  response.once("close", () => {
    void events.return(undefined).catch(() => {});
  });
  try {
    for (let next = first; !next.done; next = await events.next())
      if (!response.writableEnded) response.write(`data: ${JSON.stringify(binding.data(next.value))}\n\n`);
  } catch (error) {
    binding.onError?.(error);
    if (!response.writableEnded)
      response.write(`event: error\ndata: ${JSON.stringify(binding.failure(error).body)}\n\n`);
  } finally {
    response.end();
  }
}
