/**
 * Wire messages carry their format version in the `Conclave-Format` header (docs/protocol.md,
 * "Format versions"): requests, replies and published notices. A header, not a body field, because
 * some request schemas refuse unknown fields, and during a rolling upgrade a process of the previous
 * release must still accept what this one sends. A receiver refuses a newer format with a
 * `format_too_new` error and reads older ones (no header: a sender of 0.2.0 or earlier, or a client
 * outside Conclave that does not say).
 */
import { headers as createHeaders, type MsgHdrs, type NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import { checkHeaderFormat, FORMAT_HEADER, FORMAT_VERSION, FormatTooNewError } from "../contracts/format.ts";
import { decodeJson, encodeJson } from "./codec.ts";
import { HandlerError } from "./errors.ts";

const FORMAT_VALUE = String(FORMAT_VERSION);

/**
 * Headers naming this release's format, shared by every message that needs no other header: a
 * publish encodes them and never changes them, so one instance serves all. They are encoded once
 * (nats-core encodes a message's headers on every publish, and copies the bytes into its buffer),
 * and changing them throws.
 */
export const FORMAT_HEADERS: MsgHdrs = (() => {
  const shared = createHeaders();
  shared.set(FORMAT_HEADER, FORMAT_VALUE);
  const bytes = (shared as unknown as { encode(): Uint8Array }).encode();
  const refuse = () => {
    throw new TypeError("FORMAT_HEADERS are shared: use withFormatHeader(createHeaders()) to add headers");
  };
  return Object.assign(shared, { encode: () => bytes, set: refuse, append: refuse, delete: refuse });
})();

/** `headers` with the format header added (they are the caller's own, for this one message), or the shared ones. */
export function withFormatHeader(headers?: MsgHdrs): MsgHdrs {
  if (!headers) return FORMAT_HEADERS;
  headers.set(FORMAT_HEADER, FORMAT_VALUE);
  return headers;
}

/** Throws a `format_too_new` HandlerError when a received message is in a newer format than this process reads. */
export function checkWireFormat(msg: { headers?: MsgHdrs | undefined; subject: string }, what?: string): void {
  try {
    checkHeaderFormat(msg.headers?.get(FORMAT_HEADER), what ?? `message on ${msg.subject}`);
  } catch (error) {
    if (error instanceof FormatTooNewError) throw new HandlerError("format_too_new", error.message);
    throw error;
  }
}

/** A received request's body, after its format: {@link decodeJson}'s checks, and `format_too_new` first. */
export function decodeMessage<S extends z.ZodType>(
  msg: { data: Uint8Array; headers?: MsgHdrs | undefined; subject: string },
  schema: S,
  what: string,
  maxBytes?: number,
): z.infer<S> {
  checkWireFormat(msg, what);
  return decodeJson(msg.data, schema, what, maxBytes);
}

/** What a reply is sent through: a core NATS message, or a service's (service.ts), which adds the header itself. */
export interface Respondable {
  respond(data?: Uint8Array, options?: { headers?: MsgHdrs }): boolean;
}

/** Answers a request with a JSON body, in this release's format. */
export function respondJson(msg: Respondable, value: unknown): boolean {
  return msg.respond(encodeJson(value), { headers: FORMAT_HEADERS });
}

/** Publishes a JSON notice (core NATS, nothing stored), in this release's format. */
export function publishJson(nc: Pick<NatsConnection, "publish">, subject: string, value: unknown): void {
  nc.publish(subject, encodeJson(value), { headers: FORMAT_HEADERS });
}
