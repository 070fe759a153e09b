import {
  type Msg,
  type NatsConnection,
  NoRespondersError,
  PermissionViolationError,
  RequestError,
  TimeoutError,
} from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import fc, { PreconditionFailure } from "fast-check";
import { z } from "zod";
import { MAX_JSON_DEPTH } from "../../src/bus/codec.ts";
import { INBOX_PREFIXES } from "../../src/bus/connection.ts";
import { STATUS_BY_CODE } from "../../src/bus/errors.ts";
import { type ErrorCode, ErrorReply } from "../../src/contracts/errors.ts";
import { WIRE_SCHEMAS } from "../../src/contracts/jsonSchemas.ts";
import { type BadInputCode, type FuzzTarget, invalidUtf8InString, malformedCases, seededRandom } from "./fuzz.ts";

/**
 * Property-based fuzzing of Conclave's subjects with fast-check
 * (test/security/propertyFuzz.test.ts): generators of hostile bodies, the
 * oracle that says how the runtime must answer each one, and the judge that
 * compares an answer with it.
 */

const encoder = new TextEncoder();
// The runtime's decoder (src/bus/codec.ts): JSON text must be UTF-8 (RFC 8259), a BOM is skipped.
const fatalUtf8 = new TextDecoder("utf-8", { fatal: true });
const encode = (text: string): Uint8Array => encoder.encode(text);

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

// ── who may send what: the users of nats.conf ──────────────────────────────

/** One user (role) of a nats.conf, with the inbox prefix its replies arrive under. */
export interface NatsUser {
  user: string;
  password: string;
  inboxPrefix: string;
}

/** Every `user: <name>, password: "<password>"` of a nats.conf, in order. */
export function natsConfUsers(config: string): NatsUser[] {
  return [...config.matchAll(/^\s*user:\s*"?([A-Za-z0-9_-]+)"?\s*,\s*password:\s*"([^"]*)"/gm)].map(
    ([, user, password]) => ({
      user: user!,
      password: password!,
      // The Conclave roles have their prefixes in src/bus/connection.ts; any other user (the operator) `_INBOX_<user>`.
      inboxPrefix: (INBOX_PREFIXES as Record<string, string>)[user!] ?? `_INBOX_${user}`,
    }),
  );
}

export const connectAs = (url: string, who: NatsUser): Promise<NatsConnection> =>
  connect({
    servers: url,
    user: who.user,
    pass: who.password,
    inboxPrefix: who.inboxPrefix,
    name: `property-fuzz-${who.user}`,
    noAsyncTraces: true,
    maxReconnectAttempts: 10,
    reconnectTimeWait: 250,
  });

/**
 * Publish permission violations a connection was told of, by subject. A
 * plain publish has no request to fail, so its refusal only shows up here
 * (the server's -ERR arrives before the PONG of the next flush).
 */
export class ViolationLog {
  readonly #counts = new Map<string, number>();
  constructor(nc: NatsConnection) {
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === "error" && status.error instanceof PermissionViolationError) {
          const subject = status.error.subject;
          this.#counts.set(subject, (this.#counts.get(subject) ?? 0) + 1);
        }
      }
    })();
  }
  count(subject: string): number {
    return this.#counts.get(subject) ?? 0;
  }
}

// ── targets and what they must answer ───────────────────────────────────────

/** One subject under test: what its endpoint decodes, and what it answers. */
export interface PropertyTarget {
  subject: string;
  /** The schema its endpoint decodes a body with. */
  request: z.ZodType;
  /** Bodies it accepts: the mutations start from them. */
  valid: readonly unknown[];
  /** Its decoder's size limit, in bytes. */
  maxBytes: number;
  /** Answered by a stream of messages closed by an empty one (requestStream's sentinel). */
  streaming?: boolean;
  /** Served, but not as requests (announcements, broadcasts): only publishing is checked. */
  fireAndForget?: boolean;
  /**
   * Checks the messages of an answer that is not an error (parsed JSON, sentinel left out);
   * `complete` is false for a stream still open when the wait ended. Returns what is wrong, or null.
   */
  answer?: (bodies: unknown[], request: unknown, complete: boolean) => string | null;
  /** What the endpoint refuses as invalid_request although its schema accepts it (a session mismatch), or null. */
  refuses?: (request: unknown) => string | null;
  /** The endpoint does not read the body (the roster): whatever it is, the request is served. */
  ignoresBody?: boolean;
  /** What an empty body stands for, when the endpoint gives it a meaning (the watch: `{}`). */
  emptyBody?: unknown;
  /** How long a valid request may stay unfinished by design (a following watch), in ms. */
  silentForMs?: (request: unknown) => number;
  /** Beyond a runtime failure's codes, a valid request may be answered invalid_request (deeper checks: a recipe, the agent id). */
  deeperChecks?: boolean;
  /** Enum fields of a discriminated shape, for fuzz.ts's malformedCases. */
  kinds?: string[][];
  /** Its share of the time budget, relative to the others' (default 1): more for slow-by-design subjects. */
  budgetWeight?: number;
}

/** A generated body: which generator made it, what it is, and its bytes. */
export interface Body {
  family: string;
  detail: string;
  payload: Uint8Array;
}

/** What the runtime must do with a body: serve it (any answer or runtime failure), or refuse it with `code`. */
export type Expectation =
  | { valid: true; request: unknown; silentForMs: number }
  | { valid: false; code: BadInputCode; why: string };

/** Deepest nesting of arrays and objects in a JSON value, walked without recursion. */
function valueDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== "object") continue;
    deepest = Math.max(deepest, depth + 1);
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/**
 * How deeply text that is not JSON nests, as codec.ts documents it: brackets
 * outside strings, counted in one pass over the bytes (a backslash in a
 * string escapes the next byte).
 */
function bracketDepth(data: Uint8Array): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < data.length; i++) {
    const byte = data[i];
    if (inString) {
      if (byte === 0x5c) i++;
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) inString = true;
    else if (byte === 0x5b || byte === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (byte === 0x5d || byte === 0x7d) depth--;
  }
  return deepest;
}

/**
 * The oracle: how the endpoint must answer `payload`, in the order its
 * decoder checks (src/bus/codec.ts decodeJson): size, nesting, UTF-8 and
 * JSON, schema, then the endpoint's own refusals.
 */
export function expectationFor(target: PropertyTarget, payload: Uint8Array): Expectation {
  const refused = (code: BadInputCode, why: string): Expectation => ({ valid: false, code, why });
  const valid = (request: unknown): Expectation => ({
    valid: true,
    request,
    silentForMs: target.silentForMs?.(request) ?? 0,
  });
  if (target.ignoresBody) return valid(null);
  if (payload.length === 0 && target.emptyBody !== undefined) return valid(target.request.parse(target.emptyBody));
  if (payload.length > target.maxBytes)
    return refused("payload_too_large", `${payload.length} > ${target.maxBytes} bytes`);
  let value: unknown;
  let json = true;
  try {
    value = JSON.parse(fatalUtf8.decode(payload));
  } catch {
    json = false;
  }
  const depth = json ? valueDepth(value) : bracketDepth(payload);
  if (depth > MAX_JSON_DEPTH) return refused("invalid_request", `nested ${depth} deep > ${MAX_JSON_DEPTH}`);
  if (!json) return refused("bad_json", "not UTF-8 JSON text");
  const parsed = target.request.safeParse(value);
  if (!parsed.success) return refused("invalid_request", `schema: ${parsed.error.issues[0]?.message ?? "?"}`);
  const why = target.refuses?.(parsed.data);
  return why ? refused("invalid_request", why) : valid(parsed.data);
}

// ── sending ─────────────────────────────────────────────────────────────────

/** How one request went, seen from the sender. */
export type Outcome =
  /** The server refused the publish: the role may not send to the subject. */
  | { kind: "refused" }
  | { kind: "no_responders" }
  /** No answer (or no closing sentinel) within the wait; `messages` came before. */
  | { kind: "timeout"; messages: Msg[] }
  /** Answered: the reply, or a stream's messages without the sentinel. */
  | { kind: "answered"; messages: Msg[] }
  /** Fire and forget: published and flushed. */
  | { kind: "published" }
  /** The request could not be made at all (a client-side error). */
  | { kind: "failed"; detail: string };

function violationIn(error: unknown): PermissionViolationError | null {
  for (let current = error; current; current = (current as { cause?: unknown }).cause) {
    if (current instanceof PermissionViolationError) return current;
  }
  return null;
}

function outcomeOfError(error: unknown, messages: Msg[]): Outcome {
  if (violationIn(error)) return { kind: "refused" };
  if (error instanceof NoRespondersError || (error instanceof RequestError && error.isNoResponders()))
    return { kind: "no_responders" };
  if (error instanceof TimeoutError || (error as { cause?: unknown })?.cause instanceof TimeoutError)
    return { kind: "timeout", messages };
  return { kind: "failed", detail: String(error) };
}

/**
 * Sends `payload` to the target's subject and waits for its answer (the
 * closing sentinel of a stream) at most `timeoutMs`. Only one request per
 * connection and subject may be in flight: nats.js hands a permission
 * violation to the first request it finds for the subject.
 */
export async function exchange(
  nc: NatsConnection,
  violations: ViolationLog,
  target: PropertyTarget,
  payload: Uint8Array,
  timeoutMs: number,
): Promise<Outcome> {
  const messages: Msg[] = [];
  try {
    if (target.fireAndForget) {
      const before = violations.count(target.subject);
      nc.publish(target.subject, payload);
      await nc.flush();
      await new Promise((resolve) => setImmediate(resolve));
      return violations.count(target.subject) > before ? { kind: "refused" } : { kind: "published" };
    }
    if (!target.streaming) {
      messages.push(await nc.request(target.subject, payload, { timeout: timeoutMs }));
      return { kind: "answered", messages };
    }
    const replies = await nc.requestMany(target.subject, payload, { strategy: "sentinel", maxWait: timeoutMs });
    for await (const msg of replies) {
      if (msg.data.length === 0) return { kind: "answered", messages };
      messages.push(msg);
    }
    return { kind: "timeout", messages };
  } catch (error) {
    return outcomeOfError(error, messages);
  }
}

// ── judging an answer ───────────────────────────────────────────────────────

/** A short, printable view of some bytes (ASCII as is, the rest as \xNN): all of them, or their head and tail. */
export function preview(data: Uint8Array | string, max = 160): string {
  const bytes = typeof data === "string" ? encode(data) : data;
  const printable = (part: Uint8Array) =>
    Array.from(part, (byte) =>
      byte >= 0x20 && byte < 0x7f && byte !== 0x5c
        ? String.fromCharCode(byte)
        : `\\x${byte.toString(16).padStart(2, "0")}`,
    ).join("");
  if (bytes.length <= max) return printable(bytes);
  const head = Math.ceil(max * 0.6);
  const tail = max - head;
  return `${printable(bytes.subarray(0, head))} …[${bytes.length - max} bytes]… ${printable(bytes.subarray(-tail))} (${bytes.length} bytes)`;
}

const MULTI_LINE = /[\r\n\u2028\u2029]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

const parseJson = (data: Uint8Array): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(fatalUtf8.decode(data)) };
  } catch {
    return { ok: false };
  }
};

const isErrorMessage = (msg: Msg, body: unknown): boolean =>
  !!msg.headers?.get("Nats-Service-Error-Code") ||
  (typeof body === "object" && body !== null && !Array.isArray(body) && "error" in body);

/** An error reply's code and whatever is wrong with its form: an ErrorReply, one line, headers that match. */
function checkErrorReply(msg: Msg, body: unknown): { code: ErrorCode | null; message: string; problems: string[] } {
  const parsed = ErrorReply.safeParse(body);
  if (!parsed.success) {
    return { code: null, message: "", problems: [`an error that is not an ErrorReply: ${preview(msg.data, 300)}`] };
  }
  const { code, message, issues } = parsed.data.error;
  const problems: string[] = [];
  if (MULTI_LINE.test(message))
    problems.push(`a ${code} message of several lines: ${JSON.stringify(message.slice(0, 300))}`);
  for (const issue of issues ?? [])
    if (MULTI_LINE.test(issue))
      problems.push(`a ${code} issue of several lines: ${JSON.stringify(issue.slice(0, 300))}`);
  const description = msg.headers?.get("Nats-Service-Error");
  if (!description) problems.push(`a ${code} error without a Nats-Service-Error header`);
  else if (CONTROL.test(description)) problems.push(`a Nats-Service-Error header with control characters`);
  const status = msg.headers?.get("Nats-Service-Error-Code");
  if (status !== String(STATUS_BY_CODE[code]))
    problems.push(`Nats-Service-Error-Code ${status} for ${code} (expected ${STATUS_BY_CODE[code]})`);
  return { code, message, problems };
}

/** Codes a request the schema accepts may still get: the runtime's own outcomes, never "your input is bad" or a crash. */
function servedCodeProblem(target: PropertyTarget, code: ErrorCode): string | null {
  if (code === "internal") return "an internal error";
  if (code === "bad_json" || code === "payload_too_large") return `${code} for a body its decoder accepts`;
  if (code === "invalid_request" && !target.deeperChecks) return "invalid_request for a body its schema accepts";
  return null;
}

/** Slack given to a request that must end by itself (a watch's timeout_ms) before its silence counts. */
const SILENCE_SLACK_MS = 2_000;
/** How long to listen to a request that may stay open by design longer than the usual wait (a following watch). */
const OPEN_BY_DESIGN_WAIT_MS = 500;

/**
 * How long to wait for the answer to a body: `timeoutMs`, or, for a valid
 * request that may stay open longer than that by design (a watch following
 * for minutes), a short listen whose silence is no failure.
 */
export function waitFor(expectation: Expectation, timeoutMs: number): { waitMs: number; mayStayOpen: boolean } {
  const mayStayOpen = expectation.valid && expectation.silentForMs + SILENCE_SLACK_MS > timeoutMs;
  return { waitMs: mayStayOpen ? OPEN_BY_DESIGN_WAIT_MS : timeoutMs, mayStayOpen };
}

/** What is wrong with `outcome` as the answer to a body with this expectation (nothing: an empty list). */
export function judge(target: PropertyTarget, expectation: Expectation, outcome: Outcome, timeoutMs: number): string[] {
  const due = expectation.valid ? "an answer" : `${expectation.code} (${expectation.why})`;
  switch (outcome.kind) {
    case "refused":
    case "published":
      return [];
    case "no_responders":
      return [`nobody serves ${target.subject} (no responders); ${due} was due`];
    case "failed":
      return [`the request could not be made: ${outcome.detail}`];
    case "timeout": {
      const { waitMs, mayStayOpen } = waitFor(expectation, timeoutMs);
      if (!mayStayOpen) {
        const what = target.streaming ? "no closing sentinel" : "no answer";
        return [`${what} within ${waitMs} ms after ${outcome.messages.length} message(s); ${due} was due`];
      }
      return checkMessages(target, expectation, outcome.messages, false);
    }
    case "answered":
      return checkMessages(target, expectation, outcome.messages, true);
  }
}

function checkMessages(target: PropertyTarget, expectation: Expectation, messages: Msg[], complete: boolean): string[] {
  const bodies: unknown[] = [];
  for (const [index, msg] of messages.entries()) {
    const body = parseJson(msg.data);
    if (!body.ok) return [`message ${index + 1} is not JSON: ${preview(msg.data, 200)}`];
    if (isErrorMessage(msg, body.value)) {
      const { code, message, problems } = checkErrorReply(msg, body.value);
      if (index !== messages.length - 1) problems.push(`${messages.length - index - 1} message(s) after the error`);
      if (code !== null) {
        if (!expectation.valid && code !== expectation.code)
          problems.push(
            `answered ${code} where ${expectation.code} was due (${expectation.why}): ${message.slice(0, 300)}`,
          );
        const servedProblem = expectation.valid ? servedCodeProblem(target, code) : null;
        if (servedProblem) problems.push(`${servedProblem}: ${message.slice(0, 300)}`);
      }
      if (problems.length > 0) return problems;
      break;
    }
    bodies.push(body.value);
  }
  if (bodies.length < messages.length) return [];
  if (!expectation.valid) return [`accepted bad input where ${expectation.code} was due (${expectation.why})`];
  if (messages.length === 0 && complete && !target.streaming) return ["an empty answer"];
  const problem = target.answer?.(bodies, expectation.request, complete) ?? null;
  return problem ? [`not a valid answer: ${problem}`] : [];
}

/** A check of a one-message answer against its reply schema. */
export const replyOf =
  (schema: z.ZodType, extra?: (reply: unknown, request: unknown) => string | null) =>
  (bodies: unknown[], request: unknown): string | null => {
    if (bodies.length !== 1) return `${bodies.length} messages`;
    const parsed = schema.safeParse(bodies[0]);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return `${issue?.path.join(".") || "(root)"}: ${issue?.message}: ${preview(JSON.stringify(bodies[0]), 200)}`;
    }
    return extra?.(parsed.data, request) ?? null;
  };

/** A check of a stream's messages, each against `schema`; `last` checks the final one of a complete stream. */
export const streamOf =
  (schema: z.ZodType, last?: (message: unknown) => string | null) =>
  (bodies: unknown[], _request: unknown, complete: boolean): string | null => {
    for (const body of bodies) {
      const parsed = schema.safeParse(body);
      if (!parsed.success) return `a stream message that is not valid: ${preview(JSON.stringify(body), 200)}`;
    }
    if (complete && last) return bodies.length === 0 ? "an empty stream" : last(bodies.at(-1));
    return null;
  };

// ── generators ──────────────────────────────────────────────────────────────

type Key = string | number;
type Path = readonly Key[];
type Container = Record<Key, unknown>;

const pathText = (path: Path): string => (path.length === 0 ? "(root)" : path.join("."));

/** Every path in a JSON value, the root first (capped). */
function pathsOf(value: unknown, max = 300): Path[] {
  const out: Path[] = [];
  const walk = (item: unknown, path: Key[]) => {
    if (out.length >= max) return;
    out.push(path);
    if (Array.isArray(item)) {
      for (const [index, child] of item.entries()) walk(child, [...path, index]);
    } else if (item !== null && typeof item === "object")
      for (const [key, child] of Object.entries(item)) walk(child, [...path, key]);
  };
  walk(value, []);
  return out;
}

const valueAt = (root: unknown, path: Path): unknown =>
  path.reduce<unknown>(
    (item, key) => (item !== null && typeof item === "object" ? (item as Container)[key] : undefined),
    root,
  );

/** Sets an own, enumerable property (`__proto__` included, which `=` would not create). */
const define = (target: Container, key: Key, value: unknown) =>
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });

/** A copy of `root` with `value` at `path` (the root itself for an empty path). */
function setAt(root: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const copy = structuredClone(root);
  const parent = valueAt(copy, path.slice(0, -1));
  if (parent !== null && typeof parent === "object") define(parent as Container, path.at(-1)!, value);
  return copy;
}

const MARK = "\u0001property-fuzz\u0001";
const MARK_JSON = JSON.stringify(MARK);

/** The JSON text of `root` with the value at `path` written as raw bytes (anything: not JSON, not UTF-8). */
function withRaw(root: unknown, path: Path, raw: Uint8Array): Uint8Array {
  const text = JSON.stringify(setAt(root, path, MARK));
  const at = text.indexOf(MARK_JSON);
  return concat(encode(text.slice(0, at)), raw, encode(text.slice(at + MARK_JSON.length)));
}

/** The JSON text of `root` with an extra member, key and value as raw bytes, in the object at `path`. */
function withRawMember(root: unknown, path: Path, key: Uint8Array, value: Uint8Array): Uint8Array {
  const text = JSON.stringify(setAt(root, [...path, MARK], MARK));
  const member = `${MARK_JSON}:${MARK_JSON}`;
  const at = text.indexOf(member);
  return concat(encode(text.slice(0, at)), key, encode(":"), value, encode(text.slice(at + member.length)));
}

/** Arrays, objects or both nested `depth` deep, built as text (JSON.stringify would overflow the stack). */
function nested(depth: number, shape: "array" | "object" | "mixed", closed: boolean): string {
  const opens: string[] = [];
  const closes: string[] = [];
  for (let i = 0; i < depth; i++) {
    const array = shape === "array" || (shape === "mixed" && i % 2 === 0);
    opens.push(array ? "[" : '{"k":');
    closes.push(array ? "]" : "}");
  }
  return closed ? `${opens.join("")}0${closes.reverse().join("")}` : opens.join("");
}

/** Pieces of odd text, as they appear inside a JSON string: escapes, raw UTF-8, and bytes that are not UTF-8 or not JSON. */
const UNICODE_PIECES: readonly (readonly [string, Uint8Array])[] = [
  ["a lone high surrogate escape", encode("\\ud800")],
  ["a lone low surrogate escape", encode("\\udfff")],
  ["a reversed surrogate pair escape", encode("\\udc00\\ud800")],
  ["a NUL escape", encode("\\u0000")],
  ["a RTL override", encode("\u202e")],
  ["bidi isolates", encode("\u2066\u2067\u2069")],
  ["a line separator", encode("\u2028")],
  ["a BOM", encode("\ufeff")],
  ["a ZWJ emoji", encode("👩‍👩‍👧")],
  ["stacked combining marks", encode("e\u0301\u0301\u0301\u0334\u20dd")],
  ["a noncharacter", encode("\uffff")],
  ["an astral letter", encode("𝕏")],
  ["a raw NUL byte", Uint8Array.of(0x00)],
  ["a raw newline", Uint8Array.of(0x0a)],
  ["a raw ESC byte", Uint8Array.of(0x1b)],
  ["a surrogate as raw bytes (CESU-8)", Uint8Array.of(0xed, 0xa0, 0x80)],
  ["an overlong '/'", Uint8Array.of(0xc0, 0xaf)],
  ["a code point past U+10FFFF", Uint8Array.of(0xf4, 0x90, 0x80, 0x80)],
  ["a cut UTF-8 sequence", Uint8Array.of(0xe2, 0x82)],
  ["a lone continuation byte", Uint8Array.of(0x80)],
  ["an unknown escape", encode("\\x41")],
  ["a short \\u escape", encode("\\u12")],
];

/** Strings long enough to reach a limit, made of one unit as it is written inside a JSON string. */
const HUGE_UNITS: readonly (readonly [string, string])[] = [
  ["ASCII", "x"],
  ["2-byte é", "é"],
  ["3-byte €", "€"],
  ["4-byte emoji", "😀"],
  ["\\n escapes", "\\n"],
  ["\\u0000 escapes", "\\u0000"],
  ["lone surrogate escapes", "\\ud800"],
  ["RTL overrides", "\u202e"],
];

/** Numbers at the edges, written as text: some are JSON, some (NaN, Infinity, hex, a leading +) are not. */
const NUMBER_TOKENS = [
  "0",
  "-0",
  "-1",
  "1",
  "0.5",
  "1.0",
  "1E2",
  "2147483647",
  "2147483648",
  "4294967296",
  "9007199254740991",
  "9007199254740992",
  "9007199254740993",
  "-9007199254740992",
  "1e308",
  "-1e308",
  "1e309",
  "-1e309",
  "5e-324",
  "1e-400",
  "NaN",
  "Infinity",
  "-Infinity",
  "+1",
  "01",
  ".5",
  "1.",
  "0x1F",
  "1e",
  "--1",
  "1_000",
] as const;

/** Keys a body should not have: prototype names, near-misses, empty. */
const EXTRA_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "",
  " ",
  "text ",
  "TEXT",
  "session_id",
  "$ref",
];

const WRONG_VALUES: unknown[] = [null, true, false, 0, -1, 1.5, "", "x", [], {}, [null], { "": null }];

type ByteOp =
  | { op: "flip"; at: number; xor: number }
  | { op: "truncate"; at: number }
  | { op: "insert"; at: number; byte: number }
  | { op: "delete"; at: number; length: number }
  | { op: "duplicate"; at: number; length: number };

function applyByteOps(data: Uint8Array, ops: readonly ByteOp[]): Uint8Array {
  let bytes = Array.from(data);
  for (const op of ops) {
    const at = bytes.length === 0 ? 0 : op.at % bytes.length;
    if (op.op === "flip" && bytes.length > 0) bytes[at] = bytes[at]! ^ op.xor;
    else if (op.op === "truncate") bytes = bytes.slice(0, at);
    else if (op.op === "insert") bytes.splice(at, 0, op.byte);
    else if (op.op === "delete") bytes.splice(at, op.length);
    else if (op.op === "duplicate") bytes.splice(at, 0, ...bytes.slice(at, at + op.length));
  }
  return Uint8Array.from(bytes);
}

/** Removes the member or element at `path`, if it is still there. */
function deleteAt(root: unknown, path: Path): void {
  const parent = valueAt(root, path.slice(0, -1));
  const key = path.at(-1)!;
  if (Array.isArray(parent) && typeof key === "number" && key < parent.length) parent.splice(key, 1);
  else if (parent !== null && typeof parent === "object" && !Array.isArray(parent)) delete (parent as Container)[key];
}

const comparePaths = (a: Path, b: Path): number => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const [x, y] = [a[i]!, b[i]!];
    if (x !== y) return typeof x === "number" && typeof y === "number" ? x - y : String(x) < String(y) ? -1 : 1;
  }
  return a.length - b.length;
};

const body = (family: string, detail: string, payload: Uint8Array): Body => ({ family, detail, payload });

const LIMIT_KEYWORDS = new Set([
  "maxLength",
  "minLength",
  "maximum",
  "minimum",
  "exclusiveMaximum",
  "exclusiveMinimum",
  "maxItems",
  "minItems",
]);

/** Every bound the schemas declare (lengths, sizes, ranges), read off their JSON Schemas. */
function schemaLimits(schemas: readonly z.ZodType[]): number[] {
  const found = new Set<number>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) for (const child of node) walk(child);
    else if (node !== null && typeof node === "object")
      for (const [key, child] of Object.entries(node)) {
        if (LIMIT_KEYWORDS.has(key) && typeof child === "number") found.add(child);
        else walk(child);
      }
  };
  for (const schema of schemas) {
    try {
      walk(z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }));
    } catch {
      // A schema JSON Schema cannot express: its bounds are left out.
    }
  }
  return [...found].sort((a, b) => a - b);
}

/** The bounds of every wire contract: a value just past one of them is where a reply outgrows its own schema. */
const WIRE_LIMITS = schemaLimits(Object.values(WIRE_SCHEMAS) as z.ZodType[]);

/**
 * Every kind of hostile body for one target, built from its valid bodies:
 * deep nesting, huge strings, odd unicode, wrong types, boundary numbers,
 * missing and extra fields, structural (fc.jsonValue) and byte mutations, the
 * cases of fuzz.ts's malformedCases, and plain random input. `seed` feeds the
 * fuzz.ts generator, so the corpus is the same for a given seed.
 */
export function hostileBodies(target: PropertyTarget, maxPayload: number, seed: number): fc.Arbitrary<Body> {
  const valid = target.valid;
  if (valid.length === 0) throw new Error(`${target.subject}: no valid body to start from`);
  const validBytes = valid.map((value) => encode(JSON.stringify(value)));
  for (const [index, bytes] of validBytes.entries()) {
    const expectation = expectationFor(target, bytes);
    if (!expectation.valid)
      throw new Error(`${target.subject}: valid body ${index} is refused (${expectation.code}: ${expectation.why})`);
  }
  const slots = valid.flatMap((value, index) => pathsOf(value).map((path) => ({ index, path })));
  const inner = slots.filter(({ path }) => path.length > 0);
  const ofType = (test: (value: unknown) => boolean) =>
    slots.filter(({ index, path }) => test(valueAt(valid[index], path)));
  const objects = ofType((value) => value !== null && typeof value === "object" && !Array.isArray(value));
  // String fields, and a new one on every object body (a body with no free text still gets a huge string).
  const strings = [
    ...ofType((value) => typeof value === "string"),
    ...objects.filter(({ path }) => path.length === 0).map(({ index }) => ({ index, path: ["pf_pad"] as Path })),
  ];
  const numbers = ofType((value) => typeof value === "number");
  const pick = <T>(items: readonly T[], fallback: T) => fc.constantFrom(...(items.length > 0 ? items : [fallback]));
  const root = { index: 0, path: [] as Path };
  const limit = Math.min(target.maxBytes, maxPayload);

  const deep = fc
    .record({
      depth: fc.oneof(
        fc.constantFrom(MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1),
        fc.integer({ min: 1, max: 6_000 }),
      ),
      shape: fc.constantFrom("array" as const, "object" as const, "mixed" as const),
      placement: fc.constantFrom("as the body", "in a field", "inside a string"),
      closed: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      slot: pick(slots, root),
    })
    .map(({ depth, shape, placement, closed, slot }) => {
      const text = nested(depth, shape, closed);
      const where = placement === "as the body" ? placement : `${placement} at ${pathText(slot.path)}`;
      const payload =
        placement === "as the body"
          ? encode(text)
          : placement === "in a field"
            ? withRaw(valid[slot.index], slot.path, encode(text))
            : // Brackets, quotes and backslashes inside a string do not nest anything.
              withRaw(valid[slot.index], slot.path, encode(JSON.stringify(`[{"\\`.repeat(depth))));
      return body("deep nesting", `${shape} ${depth} deep${closed ? "" : " (unclosed)"} ${where}`, payload);
    });

  const huge = fc
    .record({
      slot: pick(strings, root),
      // Half of them at the limit (one byte under, at, over); a failure shrinks to "any size", then to a small one.
      mode: fc.constantFrom("any size", "at the limit"),
      size: fc.integer({ min: 0, max: limit + 4_096 }),
      offset: fc.integer({ min: -1, max: 1 }),
      unit: fc.constantFrom(...HUGE_UNITS),
    })
    .map(({ slot, mode, size, offset, unit: [label, unit] }) => {
      const total = Math.min(mode === "at the limit" ? limit + offset : size, maxPayload);
      const text = JSON.stringify(setAt(valid[slot.index], slot.path, MARK));
      const at = text.indexOf(MARK_JSON);
      const [before, after] = [encode(text.slice(0, at)), encode(text.slice(at + MARK_JSON.length))];
      const room = Math.max(0, total - before.length - after.length - 2);
      const unitBytes = encode(unit).length;
      const count = Math.floor(room / unitBytes);
      const literal = encode(`"${unit.repeat(count)}${"x".repeat(room - count * unitBytes)}"`);
      const payload = concat(before, literal, after);
      return body("huge string", `${payload.length} bytes of ${label} at ${pathText(slot.path)}`, payload);
    });

  const piecesOf = (indexes: number[]) => ({
    label: indexes.map((i) => UNICODE_PIECES[i]![0]).join(", "),
    literal: concat(encode('"'), ...indexes.map((i) => UNICODE_PIECES[i]![1]), encode('"')),
  });
  const pieces = fc.array(fc.integer({ min: 0, max: UNICODE_PIECES.length - 1 }), { minLength: 1, maxLength: 6 });
  const bom = fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });
  const withBom = (payload: Uint8Array, yes: boolean) =>
    yes ? concat(Uint8Array.of(0xef, 0xbb, 0xbf), payload) : payload;
  const unicode = fc.oneof(
    fc.record({ slot: pick(slots, root), pieces, bom }).map(({ slot, pieces: indexes, bom: yes }) => {
      const { label, literal } = piecesOf(indexes);
      const payload = withBom(withRaw(valid[slot.index], slot.path, literal), yes);
      return body(
        "odd unicode",
        `${label} as the value at ${pathText(slot.path)}${yes ? ", after a BOM" : ""}`,
        payload,
      );
    }),
    fc.record({ slot: pick(objects, root), pieces, bom }).map(({ slot, pieces: indexes, bom: yes }) => {
      const { label, literal } = piecesOf(indexes);
      const payload = withBom(withRawMember(valid[slot.index], slot.path, literal, encode("1")), yes);
      return body("odd unicode", `${label} as a key in ${pathText(slot.path)}${yes ? ", after a BOM" : ""}`, payload);
    }),
  );

  const wrongType = fc
    .record({
      slot: pick(inner, root),
      value: fc.oneof(fc.constantFrom(...WRONG_VALUES), fc.jsonValue({ maxDepth: 2 })),
    })
    .map(({ slot, value }) =>
      body(
        "wrong type",
        `${preview(JSON.stringify(value), 60)} at ${pathText(slot.path)}`,
        encode(JSON.stringify(setAt(valid[slot.index], slot.path, value))),
      ),
    );

  // Same type, other value: most stay valid, so the work behind the decoder runs on odd values too.
  const leaves = inner.filter(({ index, path }) => {
    const value = valueAt(valid[index], path);
    return value === null || typeof value !== "object" || (Array.isArray(value) && value.length > 0);
  });
  // Just under, at and just over every bound a schema declares (the target's and every wire contract's).
  const limits = [...new Set([...WIRE_LIMITS, ...schemaLimits([target.request])])];
  const around = (max: number) =>
    [...new Set(limits.flatMap((bound) => [bound - 1, bound, bound + 1]).filter((n) => n >= 0 && n <= max))].sort(
      (a, b) => a - b,
    );
  const sameType = fc
    .record({
      slot: pick(leaves, root),
      text: fc.oneof(
        fc.constantFrom(...around(70_000)).map((length) => "y".repeat(length)),
        fc.string({ unit: "grapheme", maxLength: 40 }),
        fc.string({ unit: "binary", maxLength: 40 }),
        fc.string({ maxLength: 3_000 }),
        fc.constantFrom(
          " ",
          "\t\n",
          "\u0000",
          "{{template}}",
          "%s%n",
          "<script>",
          "'; DROP TABLE",
          "..",
          "*",
          ">",
          "a.b",
        ),
      ),
      number: fc.oneof(
        fc.constantFrom(...limits.flatMap((bound) => [bound - 1, bound, bound + 1])),
        fc.integer(),
        fc.double(),
        fc.constantFrom(0, -0, -1, 1, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 1e308, 5e-324, 0.5, 2 ** 31),
      ),
      copies: fc.oneof(fc.integer({ min: 0, max: 200 }), fc.constantFrom(...around(600))),
    })
    .map(({ slot, text, number, copies }) => {
      const current = valueAt(valid[slot.index], slot.path);
      const [next, what] = Array.isArray(current)
        ? [Array.from({ length: copies }, () => current[0]), `${copies} copies of its first element`]
        : typeof current === "string"
          ? [text, preview(JSON.stringify(text), 60)]
          : typeof current === "number"
            ? [number, JSON.stringify(number)]
            : typeof current === "boolean"
              ? [!current, String(!current)]
              : [null, "null"];
      return body(
        "same type",
        `${what} at ${pathText(slot.path)}`,
        encode(JSON.stringify(setAt(valid[slot.index], slot.path, next))),
      );
    });

  const boundary = fc
    .record({ slot: fc.oneof(pick(numbers, root), pick(slots, root)), token: fc.constantFrom(...NUMBER_TOKENS) })
    .map(({ slot, token }) =>
      body(
        "boundary number",
        `${token} at ${pathText(slot.path)}`,
        withRaw(valid[slot.index], slot.path, encode(token)),
      ),
    );

  const missingAndExtra = fc.nat({ max: valid.length - 1 }).chain((index) => {
    const paths = pathsOf(valid[index]).filter((path) => path.length > 0);
    const objectPaths = pathsOf(valid[index]).filter((path) => {
      const value = valueAt(valid[index], path);
      return value !== null && typeof value === "object" && !Array.isArray(value);
    });
    const topKeys = Object.keys(valid[index] ?? {});
    return fc
      .record({
        drop: fc.subarray(paths, { maxLength: Math.min(4, paths.length) }),
        extra: fc.array(
          fc.record({
            at: pick(objectPaths, [] as Path),
            key: fc.oneof(fc.constantFrom(...EXTRA_KEYS), fc.string({ maxLength: 12 })),
            value: fc.jsonValue({ maxDepth: 2 }),
          }),
          { maxLength: 3 },
        ),
        duplicate:
          topKeys.length > 0
            ? fc.option(fc.record({ key: fc.constantFrom(...topKeys), value: fc.jsonValue({ maxDepth: 1 }) }), {
                nil: undefined,
              })
            : fc.constant(undefined),
      })
      .map(({ drop, extra, duplicate }) => {
        const value = structuredClone(valid[index]);
        for (const path of [...drop].sort(comparePaths).reverse()) deleteAt(value, path);
        for (const { at, key, value: added } of extra) {
          const parent = valueAt(value, at);
          if (parent !== null && typeof parent === "object" && !Array.isArray(parent))
            define(parent as Container, key, added);
        }
        let text = JSON.stringify(value);
        if (duplicate && text.startsWith("{") && text.endsWith("}")) {
          const member = `${JSON.stringify(duplicate.key)}:${JSON.stringify(duplicate.value)}`;
          text = `${text.slice(0, -1)}${text === "{}" ? "" : ","}${member}}`;
        }
        const parts = [
          drop.length > 0 ? `without ${drop.map(pathText).join(", ")}` : "",
          extra.length > 0
            ? `with extra ${extra.map(({ at, key }) => `${pathText(at)}[${JSON.stringify(key)}]`).join(", ")}`
            : "",
          duplicate ? `with "${duplicate.key}" twice` : "",
        ].filter(Boolean);
        return body("missing and extra fields", parts.join("; ") || "unchanged", encode(text));
      });
  });

  const structural = fc
    .record({
      slot: pick(slots, root),
      op: fc.constantFrom("replaced", "wrapped in an array", "wrapped in an object", "as a JSON string"),
      value: fc.jsonValue({ maxDepth: 3 }),
    })
    .map(({ slot, op, value }) => {
      const current = valueAt(valid[slot.index], slot.path);
      const next =
        op === "replaced"
          ? value
          : op === "wrapped in an array"
            ? [current]
            : op === "wrapped in an object"
              ? { value: current }
              : JSON.stringify(current);
      return body(
        "structural mutation",
        `${pathText(slot.path)} ${op}${op === "replaced" ? ` by ${preview(JSON.stringify(value), 60)}` : ""}`,
        encode(JSON.stringify(setAt(valid[slot.index], slot.path, next))),
      );
    });

  const byteOp: fc.Arbitrary<ByteOp> = fc.oneof(
    fc.record({ op: fc.constant("flip" as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
    fc.record({ op: fc.constant("truncate" as const), at: fc.nat() }),
    fc.record({ op: fc.constant("insert" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ op: fc.constant("delete" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 16 }) }),
    fc.record({ op: fc.constant("duplicate" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 64 }) }),
  );
  const bytes = fc
    .record({ index: fc.nat({ max: valid.length - 1 }), ops: fc.array(byteOp, { minLength: 1, maxLength: 4 }) })
    .map(({ index, ops }) =>
      body(
        "byte mutation",
        ops.map((op) => Object.values(op).join(" ")).join("; "),
        applyByteOps(validBytes[index]!, ops),
      ),
    );

  // The cases test/e2e/fuzz.test.ts sends, as one more generator (their codes are the oracle's to judge).
  const fuzzTarget: FuzzTarget<z.ZodType> = {
    valid: valid[0],
    schema: target.request,
    kinds: target.kinds ?? [],
    maxBytes: target.maxBytes,
  };
  const corpus = [
    ...malformedCases(fuzzTarget, seededRandom(seed), maxPayload),
    invalidUtf8InString(fuzzTarget, seededRandom(seed ^ 0x5a5a)),
  ].map((fuzz) => body("fuzz.ts corpus", fuzz.kind, fuzz.payload));

  const random = fc.oneof(
    fc.uint8Array({ maxLength: 512 }).map((data) => body("random", "random bytes", data)),
    fc.jsonValue({ maxDepth: 4 }).map((value) => body("random", "random JSON", encode(JSON.stringify(value)))),
    fc.string({ unit: "binary", maxLength: 256 }).map((text) => body("random", "random text", encode(text))),
  );

  return fc.oneof(
    deep,
    huge,
    unicode,
    wrongType,
    sameType,
    boundary,
    missingAndExtra,
    structural,
    bytes,
    fc.constantFrom(...corpus),
    random,
  );
}

// ── running ─────────────────────────────────────────────────────────────────

/**
 * A time budget that never cuts a run short (fast-check's interruptAfterTimeLimit
 * races the run in progress and drops its outcome, which would hide a request
 * that hangs): no run starts after `runMs`, and once a run has failed,
 * shrinking goes on for at most `shrinkMs`.
 */
export function timeBudget(runMs: number, shrinkMs: number): fc.Plugin<unknown> {
  return () => {
    const started = performance.now();
    let failedAt: number | null = null;
    return {
      decorateRun: (nestedRun) => async (value) => {
        const now = performance.now();
        if (failedAt === null ? now - started >= runMs : now - failedAt >= shrinkMs)
          return new PreconditionFailure(true);
        const result = await nestedRun(value);
        if (failedAt === null && result !== null && !PreconditionFailure.isFailure(result))
          failedAt = performance.now();
        return result;
      },
    };
  };
}

/** A stable 32-bit seed per subject, from the file's seed: each subject replays alone. */
export const seedFor = (seed: number, subject: string): number =>
  [...subject].reduce((hash, char) => Math.imul(hash ^ char.charCodeAt(0), 16_777_619), seed | 0) | 0;

/** Counts per outcome, for the summary. */
export type Tally = Record<string, number>;

/** How an outcome is counted: refused by permissions, the answer's code, ok, or the failure. */
export function outcomeLabel(outcome: Outcome): string {
  if (outcome.kind !== "answered") return outcome.kind;
  const last = outcome.messages.at(-1);
  if (!last) return "ok";
  const parsed = parseJson(last.data);
  if (parsed.ok && isErrorMessage(last, parsed.value)) {
    const error = ErrorReply.safeParse(parsed.value);
    return error.success ? error.data.error.code : "malformed error";
  }
  return "ok";
}
