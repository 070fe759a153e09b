import { createHash } from "node:crypto";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { HandlerError } from "../../bus/errors.ts";
import { buckets } from "../../bus/subjects.ts";
import { setting } from "../../config/load.ts";
import type { ToolOutputRef, ToolOutputSlice } from "../../contracts/tool.ts";
import { turnKey } from "../../contracts/turnKey.ts";
import { messageOf } from "../../errors.ts";
import { checkBucketReplicas, configuredReplicas, patientlySetUp } from "../../nats/replicas.ts";

/** How long a stored result is kept: a turn reads its own results, so a day is plenty. */
export const TOOL_OUTPUT_TTL_MS = 24 * 60 * 60 * 1_000;
/** Most of a result that is stored (a KV value stays under nats-server's default 1 MB payload). */
export const TOOL_OUTPUT_STORED_MAX = 960 * 1_024;
/** The preview's size, at most (never more than the limit itself). */
const PREVIEW_BYTES = 2_048;

/** The first `bytes` bytes of `text`'s UTF-8, cut before a character that would not fit whole. */
function utf8Prefix(text: string, bytes: number): string {
  const buffer = Buffer.from(text, "utf8");
  if (buffer.length <= bytes) return text;
  let end = bytes;
  // A continuation byte (10xxxxxx) is inside a character: back up to its first byte.
  while (end > 0 && (buffer[end]! & 0xc0) === 0x80) end--;
  return buffer.subarray(0, end).toString("utf8");
}

/**
 * Large tool results by reference: a result whose JSON is over the limit
 * (`CONCLAVE_TOOL_OUTPUT_MAX_BYTES`, default 16 KiB) is stored whole in the
 * KV bucket `conclave_tool_outputs` under a handle of its turn and call,
 * and the agent (and the turn's log) gets a ToolOutputRef: a preview, the
 * handle and the size. The same call gives the same handle, so a takeover
 * that makes a call again stores its own result where the log points.
 */
export class ToolOutputs {
  readonly maxBytes: number;
  #kv: Promise<KV> | null = null;

  constructor(
    private readonly nc: NatsConnection,
    options: { maxBytes?: number } = {},
  ) {
    this.maxBytes = options.maxBytes ?? setting(process.env, "CONCLAVE_TOOL_OUTPUT_MAX_BYTES");
  }

  /** The bucket, created (or checked) on first use: a runner whose tools return small results never opens it. */
  #bucket(): Promise<KV> {
    this.#kv ??= (async () => {
      const replicas = configuredReplicas();
      const kv = await patientlySetUp(() =>
        new Kvm(this.nc).create(buckets.toolOutputs, { history: 1, ttl: TOOL_OUTPUT_TTL_MS, replicas }),
      );
      await checkBucketReplicas(kv, buckets.toolOutputs, replicas);
      return kv;
    })();
    this.#kv.catch(() => {
      this.#kv = null; // tried again by the next large result
    });
    return this.#kv;
  }

  /** The handle of a call's result: `<session>.<turn>.<hash of the call id>`. */
  static handleOf(sessionId: string, turnId: number, callId: string): string {
    return `${turnKey(sessionId, turnId)}.${createHash("sha256").update(callId).digest("hex").slice(0, 16)}`;
  }

  /**
   * The result as the agent gets it: itself when its JSON is within the limit, else a reference to it,
   * stored. A result that cannot be stored is still cut to its preview (the reference has no handle).
   */
  async shrink(sessionId: string, turnId: number, callId: string, result: unknown): Promise<unknown> {
    if (result === undefined) return result;
    const text = JSON.stringify(result);
    if (text === undefined || text.length <= this.maxBytes / 4) return result; // surely within (≤ 4 bytes a unit)
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes <= this.maxBytes) return result;
    const preview = utf8Prefix(text, Math.min(PREVIEW_BYTES, this.maxBytes));
    const handle = ToolOutputs.handleOf(sessionId, turnId, callId);
    try {
      const stored = utf8Prefix(text, TOOL_OUTPUT_STORED_MAX);
      await (await this.#bucket()).put(handle, stored);
      const ref: ToolOutputRef = { truncated: true, preview, handle, bytes };
      return stored.length < text.length ? { ...ref, stored_bytes: Buffer.byteLength(stored, "utf8") } : ref;
    } catch (error) {
      return { truncated: true, preview, bytes, not_stored: messageOf(error) };
    }
  }

  /** A slice of a stored result, for a call of the same turn: `not_found` once it is gone (24 h) or never was. */
  async read(
    turn: { session_id: string; turn_id: number },
    handle: string,
    offset: number,
    length: number,
  ): Promise<ToolOutputSlice> {
    if (!handle.startsWith(`${turnKey(turn.session_id, turn.turn_id)}.`))
      throw new HandlerError(
        "forbidden",
        `tool output ${handle} is not one of turn ${turn.session_id}/${turn.turn_id}`,
      );
    const entry = await (await this.#bucket()).get(handle);
    if (entry?.operation !== "PUT") throw new HandlerError("not_found", `no stored tool output ${handle} (any more)`);
    const whole = Buffer.from(entry.value);
    return { text: whole.subarray(offset, offset + length).toString("utf8"), offset, bytes: whole.length };
  }
}
