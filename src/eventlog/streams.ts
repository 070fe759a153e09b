import type { JetStreamManager, StreamConfig, StreamInfo } from "@nats-io/jetstream";
import { DiscardPolicy, JetStreamApiError, StorageType } from "@nats-io/jetstream";
import { isStreamNotFound } from "../bus/errors.ts";
import { streams, subjects } from "../bus/subjects.ts";
import { checkReplicas, configuredReplicas, patientlySetUp } from "../nats/replicas.ts";

/**
 * Creates a stream with the configured replicas (CONCLAVE_REPLICAS, src/nats/replicas.ts), or
 * leaves an existing one as it is (so operators may tune limits by hand) once its replicas are
 * checked: other replicas than configured is a ReplicasMismatchError, never a silent change.
 */
export async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string },
): Promise<void> {
  const replicas = config.num_replicas ?? configuredReplicas();
  let existing: StreamInfo | null = null;
  try {
    existing = await patientlySetUp(() => jsm.streams.info(config.name));
  } catch (error) {
    if (!isStreamNotFound(error)) throw error;
    try {
      await patientlySetUp(() => jsm.streams.add({ ...config, num_replicas: replicas }));
    } catch (addError) {
      // Another process created it between our info and add (or a retried add landed): that is fine.
      if (!(addError instanceof JetStreamApiError) || !/already in use/.test(addError.message)) throw addError;
    }
  }
  if (existing) checkReplicas(existing, replicas);
}

/** Episodic memory: one message per committed turn. */
export const ensureMemoryStream = (jsm: JetStreamManager) =>
  ensureStream(jsm, {
    name: streams.memory,
    subjects: [subjects.allEpisodes],
    storage: StorageType.File,
    duplicate_window: 120_000_000_000,
  });

/**
 * How long a runner may hold a WAL entry without a sign of life before it is
 * redelivered: what a dead runner's turns wait before a survivor takes them
 * over (with its liveness lease's 1.5 s, under 2 s). Its holder sends one
 * every third of it (`settlement.ts`), per entry held: traffic follows the
 * work in flight, not the sessions.
 */
export const WAL_ACK_WAIT_MS = 1_500;

/**
 * How long one pull of a long-lived consumer (the runners' WAL, a follow of the event log) waits
 * before it is made again; its heartbeats come every half of it. A consumer whose leader node
 * died is pulled again, from the new leader, within seconds: with nats.js's default (30 s, 15 s
 * heartbeats) a cluster that lost a node left runners waiting some 40 s for the next turn.
 */
export const PULL_EXPIRES_MS = 5_000;
/**
 * Times runners may start a turn (each crash mid-turn is one) before it is
 * declared poison and moved to the dead-letter stream. Counted in the turn's
 * status, not in JetStream deliveries: a runner that hands an entry to the
 * session's owner (nak) has not tried it.
 */
export const MAX_TURN_ATTEMPTS = 5;

/** Rejected input and poison turns, kept for a week for inspection; bounded (the oldest go first), so no peer can fill the store. */
export const ensureDeadLetterStream = (jsm: JetStreamManager) =>
  ensureStream(jsm, {
    name: streams.deadLetters,
    subjects: [subjects.allDeadLetters],
    storage: StorageType.File,
    max_age: 7 * 24 * 3_600 * 1_000_000_000,
    max_msgs: 100_000,
    max_bytes: 256 * 1024 * 1024,
    max_msg_size: 256 * 1024,
    discard: DiscardPolicy.Old,
  });

/**
 * Erase audit records (`conclave.audit.erase.<session>`): content-free, kept
 * without limit (an operator may set one by hand), and never purged or
 * deleted through the API (`deny_purge`, `deny_delete`): no erase removes them.
 */
export const ensureAuditStream = (jsm: JetStreamManager) =>
  ensureStream(jsm, {
    name: streams.audit,
    subjects: [subjects.allAudit],
    storage: StorageType.File,
    deny_delete: true,
    deny_purge: true,
    max_msg_size: 64 * 1024,
  });
