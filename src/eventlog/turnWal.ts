/**
 * The turn write-ahead log (`CONCLAVE_TURNS`): an accepted turn is stored
 * here before its ack, under its session's partition
 * (`conclave.wal.<partition>.<session>`, src/contracts/partitions.ts).
 * Work-queue retention: an entry leaves once a runner acks it as finished.
 * Each partition has one durable pull consumer with explicit acks, pulled by
 * the runner that owns the partition (src/runtime/runner/partitions.ts).
 */
import type { ConsumerConfig, ConsumerInfo, JetStreamManager } from "@nats-io/jetstream";
import { AckPolicy, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { LEGACY_RUNNER_CONSUMER, runnerConsumer, streams, subjects } from "../bus/subjects.ts";
import { DEFAULT_PARTITIONS, MAX_PARTITIONS } from "../contracts/partitions.ts";
import { ConclaveError } from "../errors.ts";
import { patientlySetUp } from "../nats/replicas.ts";
import { nextMessage } from "./eraseSecure.ts";
import { ensureStream, WAL_ACK_WAIT_MS } from "./streams.ts";

/** How a partition consumer names its partition and the WAL's count, for the next runner to read back. */
const describe = (partition: number, partitions: number) => `conclave WAL partition ${partition} of ${partitions}`;
const COUNT_IN_DESCRIPTION = /^conclave WAL partition \d+ of (\d+)$/;

/** A partition count that cannot be one (`CONCLAVE_PARTITIONS`, `RunnerOptions.partitions`). */
export function checkPartitions(partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > MAX_PARTITIONS)
    throw new ConclaveError(
      "config",
      `partitions must be a whole number from 1 to ${MAX_PARTITIONS}, not ${partitions}`,
    );
  return partitions;
}

/**
 * Makes the WAL and its partitions' consumers, or finds them made, and
 * returns the WAL's partition count: fixed when the WAL was made, so
 * `requested` only counts for a new one (a different count asked of an
 * existing WAL is a `config` error naming both). A WAL made before partitions
 * (one consumer all runners shared) is brought over once its entries are run:
 * while it holds some, this refuses with an `unavailable` error saying so.
 */
export async function ensureTurnWal(jsm: JetStreamManager, requested?: number): Promise<number> {
  if (requested !== undefined) checkPartitions(requested);
  await ensureStream(jsm, {
    name: streams.turns,
    subjects: [subjects.allWal],
    storage: StorageType.File,
    retention: RetentionPolicy.Workqueue,
    duplicate_window: 120_000_000_000,
  });
  const made = await partitionCount(jsm);
  if (made !== null) {
    if (requested !== undefined && requested !== made)
      throw new ConclaveError(
        "config",
        `the turn WAL has ${made} partitions, fixed when it was made: ${requested} cannot be asked of it (docs/operations.md, "Scaling out")`,
      );
    return made;
  }
  await retireSharedConsumer(jsm);
  const partitions = requested ?? DEFAULT_PARTITIONS;
  // Partition 0 first: of two runners making a new WAL at once, the one that loses reads the other's count.
  const first = await addPartition(jsm, 0, partitions);
  const count = countOf(first) ?? partitions;
  await Promise.all(Array.from({ length: count - 1 }, (_, i) => addPartition(jsm, i + 1, count)));
  return count;
}

const countOf = (info: ConsumerInfo | null): number | null => {
  const match = info?.config.description?.match(COUNT_IN_DESCRIPTION);
  return match ? Number(match[1]) : null;
};

/** The partition count the WAL's consumers record; null when none is made yet. */
async function partitionCount(jsm: JetStreamManager): Promise<number | null> {
  const info = await patientlySetUp(() => jsm.consumers.info(streams.turns, runnerConsumer(0))).catch(() => null);
  return countOf(info);
}

async function addPartition(jsm: JetStreamManager, partition: number, partitions: number): Promise<ConsumerInfo> {
  const config: Partial<ConsumerConfig> = {
    durable_name: runnerConsumer(partition),
    description: describe(partition, partitions),
    filter_subject: subjects.walPartition(partition),
    ack_policy: AckPolicy.Explicit,
    ack_wait: WAL_ACK_WAIT_MS * 1_000_000,
    max_deliver: -1,
    max_ack_pending: 10_000,
  };
  try {
    return await patientlySetUp(() => jsm.consumers.add(streams.turns, config));
  } catch (error) {
    // Made meanwhile by another runner with another count: its consumer stands, and so does its count.
    const existing = await jsm.consumers.info(streams.turns, runnerConsumer(partition)).catch(() => null);
    if (existing) return existing;
    throw error;
  }
}

/** Removes the consumer runners shared before partitions, once nothing is left in it. */
async function retireSharedConsumer(jsm: JetStreamManager): Promise<void> {
  const shared = await patientlySetUp(() => jsm.consumers.info(streams.turns, LEGACY_RUNNER_CONSUMER)).catch(
    () => null,
  );
  if (!shared) return;
  const left = shared.num_pending + shared.num_ack_pending;
  if (left > 0)
    throw new ConclaveError(
      "unavailable",
      `the turn WAL holds ${left} entr${left === 1 ? "y" : "ies"} of runners from before partitions: let a runner of that version finish them, then start this one (docs/operations.md, "Upgrading to partitions")`,
    );
  await patientlySetUp(() => jsm.consumers.delete(streams.turns, LEGACY_RUNNER_CONSUMER));
}

/** Entries of one session the WAL is read for at most (a session's accepted, unsettled turns). */
const MAX_SESSION_ENTRIES = 1_000;

/**
 * The turn ids whose entries the WAL still holds for a session, oldest
 * first: accepted and not yet settled (a settled entry leaves the WAL). One
 * message read per entry, on the session's own subject.
 */
export async function walTurnIds(jsm: JetStreamManager, sessionId: string, partitions: number): Promise<number[]> {
  const subject = subjects.walOf(sessionId, partitions);
  const ids: number[] = [];
  let seq = 0;
  for (let read = 0; read < MAX_SESSION_ENTRIES; read++) {
    const msg = await nextMessage(jsm, streams.turns, subject, seq + 1);
    // nats-server 2.9 may answer with an earlier message: nothing after `seq`, then.
    if (!msg || msg.seq <= seq) break;
    seq = msg.seq;
    const turnId = turnIdOf(msg.data);
    if (turnId !== null) ids.push(turnId);
  }
  return ids;
}

const decoder = new TextDecoder();

function turnIdOf(data: Uint8Array): number | null {
  try {
    const turnId = (JSON.parse(decoder.decode(data)) as { turn_id?: unknown }).turn_id;
    return typeof turnId === "number" ? turnId : null;
  } catch {
    return null; // not a turn: the runner that pulls it keeps it as a dead letter
  }
}
