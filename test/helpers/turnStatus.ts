import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { buckets } from "../../src/bus/subjects.ts";
import { TurnStatusRecord } from "../../src/contracts/wal.ts";

const decoder = new TextDecoder();
const SETTLED = new Set(["done", "failed", "expired"]);

/**
 * Resolves with a turn's status record once it is settled (done, failed or
 * expired), following the `conclave_turns` KV key as it changes (a watch, not
 * polling); rejects with the last status seen after `timeoutMs`.
 */
export async function settledStatus(
  nc: NatsConnection,
  sessionId: string,
  turnId: number,
  timeoutMs = 30_000,
): Promise<TurnStatusRecord> {
  const kv = await new Kvm(nc).open(buckets.turns);
  const watch = await kv.watch({ key: `${sessionId}.${turnId}` });
  let last: TurnStatusRecord | null = null;
  const timer = setTimeout(() => watch.stop(), timeoutMs);
  try {
    for await (const entry of watch) {
      if (entry.operation !== "PUT") continue;
      last = TurnStatusRecord.parse(JSON.parse(decoder.decode(entry.value)));
      if (SETTLED.has(last.status)) return last;
    }
  } finally {
    clearTimeout(timer);
    watch.stop();
  }
  throw new Error(
    `turn ${sessionId}/${turnId} not settled within ${timeoutMs} ms (last status: ${last ? `${last.status}, ${last.attempts} attempt(s)` : "none"})`,
  );
}

/** A turn's status record as stored now, or null when it has none (one read, no watch). */
export async function readStatus(
  nc: NatsConnection,
  sessionId: string,
  turnId: number,
): Promise<TurnStatusRecord | null> {
  const kv = await new Kvm(nc).open(buckets.turns);
  const entry = await kv.get(`${sessionId}.${turnId}`);
  if (entry?.operation !== "PUT") return null;
  return TurnStatusRecord.parse(JSON.parse(decoder.decode(entry.value)));
}
