import type { Msg, MsgHdrs, NatsConnection, QueuedIterator } from "@nats-io/nats-core";
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/nats-core";
import type { z } from "zod";
import { ErrorReply } from "../contracts/errors.ts";
import { checkHeaderFormat, FORMAT_HEADER } from "../contracts/format.ts";
import { describeIssues } from "../contracts/issues.ts";
import { tracingActive } from "../telemetry/tracer.ts";
import { encodeJson } from "./codec.ts";
import { isErrorCode, RemoteCallError } from "./errors.ts";
import { InboxRequests } from "./inboxRequests.ts";
import { tracedRequest } from "./requestSpans.ts";
import { ServiceErrorCodeHeader, ServiceErrorHeader } from "./service.ts";
import { withFormatHeader } from "./wire.ts";

export interface RequestOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * Headers to send. Without them, while tracing is on, the request is sent in
   * a client span whose context goes in its headers (src/bus/requestSpans.ts).
   */
  headers?: MsgHdrs;
}

/**
 * Sends a JSON request and returns the validated reply. Every failure is a
 * RemoteCallError with a code: `timeout`, `no_responders` (nobody serves the
 * subject), the remote's own error code, or `internal` for a malformed reply.
 */
export async function requestJson<S extends z.ZodType>(
  nc: NatsConnection,
  subject: string,
  payload: unknown,
  replySchema: S,
  options: RequestOptions,
): Promise<z.infer<S>> {
  if (options.headers === undefined && tracingActive())
    return tracedRequest(subject, payload, (headers) =>
      requestJson(nc, subject, payload, replySchema, { ...options, headers }),
    );
  options.signal?.throwIfAborted();
  let msg: Msg;
  try {
    // Over the connection's own inbox (inboxRequests.ts): no error object built for a request that succeeds.
    const pending = InboxRequests.of(nc).request(subject, encodeJson(payload), {
      timeoutMs: options.timeoutMs,
      headers: withFormatHeader(options.headers),
    });
    msg = options.signal ? await raceAbort(pending, options.signal) : await pending;
  } catch (error) {
    if (error instanceof TimeoutError)
      throw new RemoteCallError(subject, "timeout", `${subject} did not answer within ${options.timeoutMs} ms`);
    if (error instanceof NoRespondersError || (error instanceof RequestError && error.isNoResponders())) {
      throw new RemoteCallError(subject, "no_responders", `no worker is serving ${subject}`);
    }
    throw error;
  }
  checkHeaderFormat(msg.headers?.get(FORMAT_HEADER), `the reply on ${subject}`);
  const body: unknown = msg.data.length > 0 ? safeJson(msg.data) : undefined;
  if (msg.headers?.get(ServiceErrorHeader)) {
    const remote = ErrorReply.safeParse(body);
    if (remote.success) {
      throw RemoteCallError.fromReply(subject, remote.data);
    }
    const code = msg.headers.get(ServiceErrorCodeHeader);
    throw new RemoteCallError(
      subject,
      "internal",
      `${subject} failed (${code}): ${msg.headers.get(ServiceErrorHeader)}`,
    );
  }
  const parsed = replySchema.safeParse(body);
  if (!parsed.success) {
    const remote = ErrorReply.safeParse(body);
    if (remote.success && isErrorCode(remote.data.error.code)) {
      throw RemoteCallError.fromReply(subject, remote.data);
    }
    throw new RemoteCallError(
      subject,
      "internal",
      `${subject} sent a malformed reply: ${describeIssues(parsed.error, { join: "; " })}`,
    );
  }
  return parsed.data;
}

const decoder = new TextDecoder();
const safeJson = (data: Uint8Array): unknown => {
  try {
    return JSON.parse(decoder.decode(data));
  } catch {
    return undefined;
  }
};

/** Stops waiting when the caller aborts (the reply, if any, is then ignored). */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new Error("aborted"));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Sends a request that is answered by a stream of messages (see serveActor's
 * `stream`): each one is validated and handed to `onMessage` as it arrives,
 * until the remote closes the exchange with an empty message. Failures are
 * RemoteCallErrors as for requestJson.
 */
export async function requestStream<S extends z.ZodType>(
  nc: NatsConnection,
  subject: string,
  payload: unknown,
  messageSchema: S,
  onMessage: (message: z.infer<S>) => void,
  options: RequestOptions,
): Promise<void> {
  if (options.headers === undefined && tracingActive())
    return tracedRequest(subject, payload, (headers) =>
      requestStream(nc, subject, payload, messageSchema, onMessage, { ...options, headers }),
    );
  options.signal?.throwIfAborted();
  let finished = false;
  // The caller gives up (a stage left, a turn cancelled): stop waiting at once, not at the stream's maxWait.
  let stopWaiting = () => {};
  try {
    const replies = await nc.requestMany(subject, encodeJson(payload), {
      strategy: "sentinel",
      maxWait: options.timeoutMs,
      headers: withFormatHeader(options.headers),
    });
    // The iterator nats-core returns is a QueuedIterator; its stop() ends the iteration.
    stopWaiting = () => (replies as QueuedIterator<unknown>).stop();
    options.signal?.addEventListener("abort", stopWaiting, { once: true });
    for await (const msg of replies) {
      if (options.signal?.aborted) throw options.signal.reason ?? new Error("aborted");
      if (msg.data.length === 0) {
        finished = true;
        break;
      }
      checkHeaderFormat(msg.headers?.get(FORMAT_HEADER), `a reply on ${subject}`);
      const body = safeJson(msg.data);
      if (msg.headers?.get(ServiceErrorHeader)) {
        const remote = ErrorReply.safeParse(body);
        if (remote.success) throw RemoteCallError.fromReply(subject, remote.data);
        throw new RemoteCallError(subject, "internal", `${subject} failed: ${msg.headers.get(ServiceErrorHeader)}`);
      }
      const parsed = messageSchema.safeParse(body);
      if (!parsed.success) {
        throw new RemoteCallError(
          subject,
          "internal",
          `${subject} sent a malformed message: ${describeIssues(parsed.error, { join: "; " })}`,
        );
      }
      onMessage(parsed.data);
    }
    if (options.signal?.aborted) throw options.signal.reason ?? new Error("aborted");
  } catch (error) {
    if (error instanceof RemoteCallError) throw error;
    if ((error instanceof RequestError && error.isNoResponders()) || error instanceof NoRespondersError) {
      throw new RemoteCallError(subject, "no_responders", `no worker is serving ${subject}`);
    }
    if (error instanceof TimeoutError)
      throw new RemoteCallError(subject, "timeout", `${subject} did not finish within ${options.timeoutMs} ms`);
    throw error;
  } finally {
    options.signal?.removeEventListener("abort", stopWaiting);
  }
  if (!finished)
    throw new RemoteCallError(subject, "timeout", `${subject} did not finish within ${options.timeoutMs} ms`);
}
