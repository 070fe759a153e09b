import { JetStreamApiCodes, JetStreamApiError, jetstream } from "@nats-io/jetstream";
import type { KV, KvOptions } from "@nats-io/kv";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import { checkRecordFormat, FormatTooNewError } from "../contracts/format.ts";
import { describeIssues } from "../contracts/issues.ts";
import { ConclaveError, messageOf, singleLine } from "../errors.ts";
import { checkBucketReplicas, configuredReplicas, patientlySetUp } from "../nats/replicas.ts";
import { encodeJson, encodeRecord } from "./codec.ts";
import { deadLetter } from "./deadLetters.ts";

const decoder = new TextDecoder();

/** A compare-and-set that lost: the key changed (or exists) since it was read. */
export const isConflict = (error: unknown): boolean =>
  (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence) ||
  /wrong last sequence|key exists/i.test(String((error as Error)?.message));

/**
 * A stored value that is not valid JSON or fails its schema (damaged, or
 * forged by whoever could write the bucket). The value stays where it is,
 * quarantined: every read of that key fails with this error, so the one
 * session it belongs to fails visibly while every other key reads on; a dead
 * letter on `conclave.dlq.kv` names it. An operator inspects it (`nats kv get`)
 * and then repairs it: puts a valid value, or deletes the key when starting
 * that key afresh is safe (see README, "What is guaranteed").
 */
export class CorruptValueError extends ConclaveError<"corrupt_value"> {
  constructor(
    readonly bucket: string,
    readonly key: string,
    readonly revision: number,
    problem: string,
  ) {
    super(
      "corrupt_value",
      singleLine(`stored value ${bucket}/${key} (revision ${revision}) is unreadable: ${problem}`),
    );
  }
}

/** The dead-letter source of quarantined KV values (`conclave.dlq.kv`). */
export const KV_DEAD_LETTERS = "kv";

/** Where a quarantined value is reported; the default writes a dead letter. Never throws. */
export type QuarantineReport = (error: CorruptValueError, raw: Uint8Array) => Promise<void>;

/** How a JsonKv is opened, beside the bucket's own options. */
export interface JsonKvOptions {
  /** Where a quarantined value is reported. Default: a dead letter on `conclave.dlq.kv`. */
  onQuarantine?: QuarantineReport;
  /**
   * Remember the value and revision of up to this many keys this instance last read or wrote, so
   * `update` starts from them and skips its read (one round trip instead of two): for keys one process
   * writes over and over (a session's turn counter, a turn's status). A stale copy costs nothing wrong:
   * the write is a compare-and-set, and a conflict reads afresh. Default 0 (off).
   */
  cacheRevisions?: number;
  /**
   * Read through the bucket's stream leader (`$JS.API.STREAM.MSG.GET`), not from whichever replica answers a
   * direct get first (a KV bucket allows direct gets, and a client's server answers from its own copy). A copy
   * left behind by a partition or a restart can answer direct gets with old values (nats-server before 2.9.17,
   * nats-io/nats-server#4171; reads after writes are not promised before 2.12): a reader that decides on
   * what it reads (who owns a session) must not see those. Default false; the role needs the stream's
   * `STREAM.MSG.GET` permission.
   */
  leaderReads?: boolean;
  /**
   * Stamp each value with the format version (`v`, docs/protocol.md "Format versions") and refuse a
   * newer one on read. Default true. Off only for values that are maps of names the user or agents
   * choose (a blackboard, per-agent cooldowns), where a reserved key would collide with theirs.
   */
  versioned?: boolean;
}

/**
 * A JetStream KV bucket of JSON values checked by a zod schema, with
 * compare-and-set updates: the one way every store here talks to KV.
 */
export class JsonKv<S extends z.ZodType> {
  /** Revisions already reported, so a key read in a loop makes one dead letter, not one per read. */
  readonly #reported = new Set<string>();
  /** Last known value and revision per key (`cacheRevisions`), oldest first; revision 0: known absent. */
  readonly #known = new Map<string, { value: z.infer<S>; revision: number }>();

  private constructor(
    readonly kv: KV,
    readonly bucket: string,
    private readonly schema: S,
    private readonly report: QuarantineReport,
    private readonly cacheSize: number,
    private readonly versioned: boolean,
  ) {}

  static async open<S extends z.ZodType>(
    nc: NatsConnection,
    bucket: string,
    schema: S,
    options: Partial<KvOptions> & JsonKvOptions = {},
  ): Promise<JsonKv<S>> {
    const { onQuarantine, cacheRevisions = 0, versioned = true, leaderReads = false, ...kvOptions } = options;
    const js = jetstream(nc);
    const report: QuarantineReport =
      onQuarantine ??
      (async (error, raw) => {
        await deadLetter(js, KV_DEAD_LETTERS, {
          subject: `$KV.${bucket}.${error.key}`,
          data: raw,
          code: error.code,
          reason: error.message,
        });
      });
    const replicas = kvOptions.replicas ?? configuredReplicas();
    const kv = await patientlySetUp(() => new Kvm(nc).create(bucket, { history: 1, ...kvOptions, replicas }));
    // An existing bucket is opened as it is: its replicas are checked, never changed.
    await checkBucketReplicas(kv, bucket, replicas);
    // nats.js reads with a direct get whenever the bucket allows it; its `direct` flag is the documented switch.
    if (leaderReads) (kv as KV & { direct: boolean }).direct = false;
    return new JsonKv(kv, bucket, schema, report, cacheRevisions, versioned);
  }

  /**
   * The value and its revision, or null when absent (or deleted). A value
   * that is not JSON or fails the schema raises CorruptValueError (and is
   * reported once per revision); it is never returned, and never deleted here.
   */
  async get(key: string): Promise<{ value: z.infer<S>; revision: number } | null> {
    const entry = await this.kv.get(key);
    if (entry?.operation !== "PUT") {
      this.#remember(key, null as z.infer<S>, 0); // absent: a following update creates it without reading again
      return null;
    }
    const found = { value: this.#decode(key, entry.revision, entry.value), revision: entry.revision };
    this.#remember(key, found.value, found.revision);
    return found;
  }

  /**
   * This instance's last known copy of the key (`cacheRevisions`), else what
   * is stored: no round trip when the key was read or written here before.
   * The copy may be stale (another process wrote since): use it where an
   * `update` of the key follows, whose compare-and-set finds that out.
   */
  async recall(key: string): Promise<{ value: z.infer<S>; revision: number } | null> {
    const known = this.#known.get(key);
    if (known) return known.revision === 0 ? null : known;
    return this.get(key);
  }

  #remember(key: string, value: z.infer<S>, revision: number): void {
    if (this.cacheSize === 0) return;
    this.#known.delete(key); // re-inserted last: the map stays in age order
    this.#known.set(key, { value, revision });
    if (this.#known.size > this.cacheSize) this.#known.delete(this.#known.keys().next().value as string);
  }

  #decode(key: string, revision: number, raw: Uint8Array): z.infer<S> {
    let problem: string;
    try {
      const json: unknown = JSON.parse(decoder.decode(raw));
      // A newer format is not damage: refused (FormatTooNewError), never quarantined.
      if (this.versioned) checkRecordFormat(json, `KV ${this.bucket}/${key} (revision ${revision})`);
      const parsed = this.schema.safeParse(json);
      if (parsed.success) return parsed.data;
      problem = describeIssues(parsed.error, { join: "; " });
    } catch (error) {
      if (error instanceof FormatTooNewError) throw error;
      problem = `not JSON (${messageOf(error)})`;
    }
    const error = new CorruptValueError(this.bucket, key, revision, problem);
    const seen = `${key}@${revision}`;
    if (!this.#reported.has(seen)) {
      if (this.#reported.size > 1_000) this.#reported.clear();
      this.#reported.add(seen);
      void this.report(error, raw).catch(() => {});
    }
    throw error;
  }

  /** A value as stored: stamped with the format version unless the bucket is unversioned. */
  encode(value: z.infer<S>): Uint8Array {
    return this.versioned ? encodeRecord(value as object) : encodeJson(value);
  }

  async put(key: string, value: z.infer<S>): Promise<void> {
    this.#known.delete(key); // a put racing an update must not leave the older copy behind
    this.#remember(key, value, await this.kv.put(key, this.encode(value)));
  }

  /** Creates the key; false when it already exists. */
  async create(key: string, value: z.infer<S>): Promise<boolean> {
    try {
      this.#remember(key, value, await this.kv.create(key, this.encode(value)));
      return true;
    } catch (error) {
      if (isConflict(error)) return false;
      throw error;
    }
  }

  /**
   * Read-modify-write with compare-and-set, retried on conflict. `change`
   * gets the current value (null when absent) and returns the new one, or
   * null to leave it as it is. Returns what was written (or kept).
   */
  async update(
    key: string,
    change: (current: z.infer<S> | null) => z.infer<S> | null,
    attempts = 50,
  ): Promise<z.infer<S> | null> {
    for (let attempt = 0; attempt < attempts; attempt++) {
      // The copy this instance last saw, if any: its compare-and-set checks it is still current.
      const known = attempt === 0 ? this.#known.get(key) : undefined;
      const found = known ?? (await this.get(key));
      const current = found && found.revision > 0 ? found : null;
      const next = change(current?.value ?? null);
      if (next === null) {
        if (!known) return current?.value ?? null;
        this.#known.delete(key); // "nothing to change" decided on a copy: confirm it on what is stored
        continue;
      }
      try {
        const data = this.encode(next);
        this.#remember(
          key,
          next,
          current ? await this.kv.update(key, data, current.revision) : await this.kv.create(key, data),
        );
        return next;
      } catch (error) {
        this.#known.delete(key);
        // Someone else wrote in between: read again. Anything else is a real failure.
        if (!isConflict(error)) throw error;
      }
    }
    throw new Error(`KV ${key}: too much contention`);
  }

  async delete(key: string): Promise<void> {
    this.#known.delete(key);
    await this.kv.delete(key);
  }

  /** Keys matching a subject-style filter (e.g. `session.*`), each once (a key updated mid-listing can be listed twice). */
  async keys(filter = ">"): Promise<string[]> {
    const keys = new Set<string>();
    for await (const key of await this.kv.keys(filter)) keys.add(key);
    return [...keys];
  }
}
