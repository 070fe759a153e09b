import type { JsMsg } from "@nats-io/jetstream";
import type { z } from "zod";
import { CorruptValueError } from "../../bus/jsonKv.ts";
import { FormatTooNewError, parseRecord } from "../../contracts/format.ts";
import { describeIssues } from "../../contracts/issues.ts";
import { messageOf } from "../../errors.ts";
import type { FollowedSession } from "./natsFollowedSession.ts";
import { edgeKey, encodeNodeId, MEMORY_GRAPH_BUCKET } from "./natsGraphKeys.ts";
import { GRAPH_ISSUES, MemoryEdge, MemoryNode } from "./types.ts";

const decoder = new TextDecoder();

/**
 * Reads the KV entries of followed sessions into their copies. A value that
 * is not valid JSON, fails its schema, or does not belong under its key is
 * skipped (the copy keeps what it had) and reported once per key and
 * revision.
 */
export class GraphEntryReader {
  readonly #reported = new Set<string>();

  constructor(private readonly onInvalid: (error: CorruptValueError, raw: Uint8Array) => void) {}

  /** One entry of a followed session's keys: applied unless older than what the copy holds. */
  apply(followed: FollowedSession, key: string, msg: JsMsg): void {
    const operation = msg.headers?.get("KV-Operation");
    const deleted = operation === "DEL" || operation === "PURGE";
    const [, type, token] = key.split(".");
    if (deleted) {
      if (!followed.advance(key, msg.seq)) return;
      followed.removeKey(key);
      return;
    }
    if (type === "n") {
      const node = this.#decode(key, msg, MemoryNode, (value) =>
        value.session_id !== followed.graph.sessionId || token !== encodeNodeId(value.id)
          ? `node '${value.id}' of session '${value.session_id}' is not the one its key names`
          : null,
      );
      if (node) followed.applyNode(key, msg.seq, node);
    } else if (type === "e") {
      const edge = this.#decode(key, msg, MemoryEdge, (value) =>
        edgeKey(value) !== key ? `edge '${value.from}' → '${value.to}' is not the one its key names` : null,
      );
      if (edge) followed.applyEdge(key, msg.seq, edge);
    } else {
      this.#invalid(key, msg, "not a node key (<session>.n.<id>) nor an edge key (<session>.e.<hash>)");
    }
  }

  #decode<T>(key: string, msg: JsMsg, schema: z.ZodType<T>, misplaced: (value: T) => string | null): T | undefined {
    let problem: string;
    try {
      const parsed = parseRecord(schema, JSON.parse(decoder.decode(msg.data)), `memory graph entry ${key}`);
      if (parsed.success) {
        const wrong = misplaced(parsed.data);
        if (!wrong) return parsed.data;
        problem = wrong;
      } else if (parsed.error instanceof FormatTooNewError) {
        problem = parsed.error.message;
      } else {
        problem = describeIssues(parsed.error, { ...GRAPH_ISSUES, join: "; " });
      }
    } catch (error) {
      problem = `not JSON (${messageOf(error)})`;
    }
    this.#invalid(key, msg, problem);
    return undefined;
  }

  #invalid(key: string, msg: JsMsg, problem: string): void {
    const seen = `${key}@${msg.seq}`;
    if (this.#reported.has(seen)) return;
    if (this.#reported.size > 1_000) this.#reported.clear();
    this.#reported.add(seen);
    try {
      this.onInvalid(new CorruptValueError(MEMORY_GRAPH_BUCKET, key, msg.seq, problem), msg.data);
    } catch {
      // A reporter that throws must not stop the session being followed.
    }
  }
}
