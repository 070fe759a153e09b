import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import type { DeadLetter } from "../../src/bus/deadLetters.ts";
import { streams } from "../../src/bus/subjects.ts";

/** mulberry32: a tiny seeded PRNG, so every fuzz run with the same seed sends the same bytes. */
export function seededRandom(seed: number) {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[int(0, items.length - 1)] as T;
  };
  return { next, int, pick };
}
export type SeededRandom = ReturnType<typeof seededRandom>;

const encoder = new TextEncoder();

/** Error codes a malformed message may be answered with. */
export type BadInputCode = "bad_json" | "invalid_request" | "payload_too_large";

/** One malformed message, what it is, the code it must be answered with, and a word its error must name. */
export interface FuzzCase {
  kind: string;
  payload: Uint8Array;
  code: BadInputCode;
  /** A regex the error message must match: the field or the problem it names. */
  names: RegExp;
}

/** A value of another JSON type than `value` (so no schema field accepts it in its place). */
function wrongTypeFor(value: unknown, rng: SeededRandom): unknown {
  if (typeof value === "string") return rng.pick([rng.int(-1e6, 1e6), true, { nested: "object" }, [value]]);
  if (typeof value === "number") return rng.pick([`${value}`, false, { n: value }, [value]]);
  if (typeof value === "boolean") return rng.pick([`${value}`, 1, [value]]);
  if (Array.isArray(value)) return rng.pick([rng.int(0, 99), "not an array", { length: value.length }]);
  return rng.pick([rng.int(0, 99), "not an object", [value], true]);
}

/** The paths of the fields of `obj`, top-level and one level down. */
function fieldPaths(obj: Record<string, unknown>): string[][] {
  const paths: string[][] = [];
  for (const [key, value] of Object.entries(obj)) {
    paths.push([key]);
    if (value && typeof value === "object" && !Array.isArray(value)) {
      for (const inner of Object.keys(value)) paths.push([key, inner]);
    }
  }
  return paths;
}

function withPath(
  obj: Record<string, unknown>,
  path: string[],
  change: (parent: Record<string, unknown>, key: string) => void,
) {
  const copy = structuredClone(obj);
  let parent: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string, unknown>;
  change(parent, path.at(-1) as string);
  return copy;
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export interface FuzzTarget<S extends z.ZodType> {
  /** A request the endpoint accepts: every mutation starts from it. */
  valid: z.input<S>;
  schema: S;
  /** Enum fields of a discriminated shape to set to an unknown kind, e.g. `["mode"]` for agents. */
  kinds: string[][];
  /** The size limit of the endpoint's decoder, in bytes. */
  maxBytes: number;
}

/**
 * The malformed messages sent to one subject, built from a valid request and
 * a seeded generator. Each case is checked against the schema here, so a
 * case the endpoint should accept can never slip in unnoticed.
 */
export function malformedCases<S extends z.ZodType>(
  target: FuzzTarget<S>,
  rng: SeededRandom,
  maxPayload: number,
): FuzzCase[] {
  const valid = target.valid as Record<string, unknown>;
  if (!target.schema.safeParse(valid).success) throw new Error("the fuzz target's valid request does not validate");
  const json = JSON.stringify(valid);
  const cases: FuzzCase[] = [
    { kind: "empty payload", payload: new Uint8Array(), code: "bad_json", names: /not valid JSON/ },
    {
      kind: "truncated JSON",
      payload: encoder.encode(json.slice(0, rng.int(1, json.length - 1))),
      code: "bad_json",
      names: /not valid JSON/,
    },
    {
      kind: "garbage text",
      payload: encoder.encode(`{${rng.pick(["'single': 1", "a:b", '"k" 1', "1:2,"])}}`),
      code: "bad_json",
      names: /not valid JSON/,
    },
    { kind: "null", payload: encoder.encode("null"), code: "invalid_request", names: /\(root\)/ },
    {
      kind: "an array",
      payload: encoder.encode(JSON.stringify([valid, rng.int(0, 9)])),
      code: "invalid_request",
      names: /\(root\)/,
    },
    {
      kind: "a number",
      payload: encoder.encode(String(rng.int(-1e9, 1e9) / 7)),
      code: "invalid_request",
      names: /\(root\)/,
    },
    {
      kind: "invalid UTF-8 bytes",
      payload: Uint8Array.from(
        Array.from({ length: rng.int(8, 64) }, () => rng.pick([0xff, 0xfe, 0xc0, 0xc1, 0xf5, 0x80, 0xbf])),
      ),
      code: "bad_json",
      names: /not valid JSON/,
    },
  ];

  // Wrong types and missing fields: each picked by the generator among the fields where it must fail.
  const paths = fieldPaths(valid);
  const wrong = paths.flatMap((path) => {
    const mutated = withPath(valid, path, (parent, key) => {
      parent[key] = wrongTypeFor(parent[key], rng);
    });
    return target.schema.safeParse(mutated).success ? [] : [{ path, mutated }];
  });
  for (let i = 0; i < 2 && wrong.length > 0; i++) {
    const { path, mutated } = wrong.splice(rng.int(0, wrong.length - 1), 1)[0] as (typeof wrong)[number];
    cases.push({
      kind: `wrong type at ${path.join(".")}`,
      payload: encoder.encode(JSON.stringify(mutated)),
      code: "invalid_request",
      names: new RegExp(escapeRegex(path.join("."))),
    });
  }
  const missing = paths.flatMap((path) => {
    const mutated = withPath(valid, path, (parent, key) => {
      delete parent[key];
    });
    return target.schema.safeParse(mutated).success ? [] : [{ path, mutated }];
  });
  for (let i = 0; i < 2 && missing.length > 0; i++) {
    const { path, mutated } = missing.splice(rng.int(0, missing.length - 1), 1)[0] as (typeof missing)[number];
    cases.push({
      kind: `missing ${path.join(".")}`,
      payload: encoder.encode(JSON.stringify(mutated)),
      code: "invalid_request",
      names: new RegExp(escapeRegex(path.join("."))),
    });
  }
  const unknownKind = rng.pick(["dream", "DELETE", "respond ", "", "__proto__"]);
  for (const path of target.kinds) {
    const mutated = withPath(valid, path, (parent, key) => {
      parent[key] = unknownKind;
    });
    if (target.schema.safeParse(mutated).success) throw new Error(`${path.join(".")}: '${unknownKind}' was accepted`);
    cases.push({
      kind: `unknown kind ${path.join(".")}=${JSON.stringify(unknownKind)}`,
      payload: encoder.encode(JSON.stringify(mutated)),
      code: "invalid_request",
      names: new RegExp(escapeRegex(path.join("."))),
    });
  }
  // Unknown fields only, none of the required ones: `type`/`kind`/`mode` as a discriminated union would have them.
  cases.push({
    kind: "unknown fields only",
    payload: encoder.encode(
      JSON.stringify({ type: "dream", kind: unknownKind, mode: "dream", [`x${rng.int(0, 999)}`]: null }),
    ),
    code: "invalid_request",
    names: /expected|required/i,
  });
  // Just under the server's max_payload: past the endpoint's limit when that is smaller, else well-formed but invalid.
  const size = maxPayload - 512;
  const padding = "x".repeat(size - '{"text":""}'.length);
  cases.push({
    kind: `oversize payload (${size} bytes)`,
    payload: encoder.encode(`{"text":"${padding}"}`),
    code: size > target.maxBytes ? "payload_too_large" : "invalid_request",
    names:
      size > target.maxBytes ? new RegExp(`${size} bytes; the limit is ${target.maxBytes}`) : /expected|required|too/i,
  });
  return cases;
}

/**
 * Well-formed JSON but for a few bytes that are not UTF-8, inside a free-text
 * string of an otherwise valid request: JSON text must be UTF-8 (RFC 8259), so
 * this is bad_json; a lenient decoder would instead turn the bytes into U+FFFD
 * and run the request with altered text.
 */
export function invalidUtf8InString<S extends z.ZodType>(target: FuzzTarget<S>, rng: SeededRandom): FuzzCase {
  const valid = target.valid as Record<string, unknown>;
  const MARK = "\u0001utf8\u0001";
  // String fields that would still validate with the replacement characters a lenient decoder makes.
  const candidates = fieldPaths(valid).filter((path) => {
    let isString = false;
    const probe = withPath(valid, path, (parent, key) => {
      isString = typeof parent[key] === "string";
      parent[key] = `${String(parent[key])}\ufffd\ufffd`;
    });
    return isString && target.schema.safeParse(probe).success;
  });
  // No free text (the scheduler's request): the bytes go into the name of an extra field instead.
  const path = candidates.length > 0 ? rng.pick(candidates) : [MARK];
  const marked = withPath(valid, path, (parent, key) => {
    parent[key] = candidates.length > 0 ? `${parent[key] as string}${MARK}` : 1;
  });
  const [before, after] = JSON.stringify(marked).split(JSON.stringify(MARK).slice(1, -1)) as [string, string];
  const bad = Array.from({ length: rng.int(1, 4) }, () => rng.pick([0xff, 0xfe, 0xc0, 0xf5, 0x80]));
  return {
    kind:
      candidates.length > 0 ? `invalid UTF-8 inside the string at ${path.join(".")}` : "invalid UTF-8 in a field name",
    payload: Uint8Array.from([...encoder.encode(before), ...bad, ...encoder.encode(after)]),
    code: "bad_json",
    names: /not valid JSON|UTF-8/i,
  };
}

/** How many dead letters each `conclave.dlq.<source>` subject holds (stream info only: no consumer needed). */
export async function deadLetterCounts(nc: NatsConnection, filter = "conclave.dlq.>"): Promise<Record<string, number>> {
  const info = await (await jetstreamManager(nc)).streams.info(streams.deadLetters, { subjects_filter: filter });
  return info.state.subjects ?? {};
}

/** Every dead letter stored so far under `filter` (read with an ordered JetStream consumer). */
export async function readDeadLetters(
  nc: NatsConnection,
  filter = "conclave.dlq.>",
): Promise<{ subject: string; letter: DeadLetter }[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(streams.deadLetters, { subjects_filter: filter });
  const total = Object.values(info.state.subjects ?? {}).reduce((sum, count) => sum + count, 0);
  if (total === 0) return [];
  const consumer = await jetstream(nc).consumers.get(streams.deadLetters, {
    filter_subjects: filter,
    deliver_policy: DeliverPolicy.All,
  });
  const letters: { subject: string; letter: DeadLetter }[] = [];
  const messages = await consumer.consume();
  const timer = setTimeout(() => void messages.stop(), 5_000);
  try {
    for await (const msg of messages) {
      letters.push({ subject: msg.subject, letter: msg.json<DeadLetter>() });
      if (letters.length >= total) break;
    }
  } finally {
    clearTimeout(timer);
    await messages.close();
  }
  return letters;
}
