/**
 * How many copies JetStream keeps of every Conclave stream and KV bucket: the
 * one place that decides it. One on a single server; three on a three-node
 * cluster (`conclave up --cluster 3` sets CONCLAVE_REPLICAS=3 for the
 * processes it starts). A stream or bucket that already exists with another
 * count is refused, never changed: moving a store between R1 and R3 is an
 * operator's decision (`nats stream edit --replicas`), not a side effect of a
 * process starting with another setting.
 */
import type { StreamInfo } from "@nats-io/jetstream";
import { setting } from "../config/load.ts";
import { ConclaveError } from "../errors.ts";
import { throughElections } from "./elections.ts";

/** An existing stream or KV bucket whose replicas differ from CONCLAVE_REPLICAS. */
export class ReplicasMismatchError extends ConclaveError<"config"> {
  constructor(
    /** `stream` or `KV bucket`. */
    readonly kind: "stream" | "KV bucket",
    /** The stream's or the bucket's name. */
    readonly store: string,
    readonly existing: number,
    readonly configured: number,
  ) {
    super(
      "config",
      `${kind} ${store} has ${existing} replica${existing === 1 ? "" : "s"} but CONCLAVE_REPLICAS is ${configured}; set CONCLAVE_REPLICAS=${existing}, or change the ${kind}'s replicas by hand (nats stream edit ${kind === "stream" ? store : `KV_${store}`} --replicas ${configured})`,
    );
  }
}

/**
 * The replica count streams and buckets are created with: CONCLAVE_REPLICAS
 * (1 to 5, default 1). A bad value is the usual one-line "config" error.
 */
export const configuredReplicas = (env: NodeJS.ProcessEnv = process.env): number => setting(env, "CONCLAVE_REPLICAS");

/** Replicas as JetStream reports them: an unset `num_replicas` means one. */
export const replicasOf = (info: Pick<StreamInfo, "config">): number => info.config.num_replicas || 1;

/**
 * Throws ReplicasMismatchError when an existing stream (or a bucket's
 * `KV_<bucket>` stream) does not have the configured replicas.
 */
export function checkReplicas(
  info: Pick<StreamInfo, "config">,
  configured: number,
  kind: "stream" | "KV bucket" = "stream",
): void {
  const existing = replicasOf(info);
  if (existing === configured) return;
  const name = kind === "KV bucket" ? info.config.name.replace(/^KV_/, "") : info.config.name;
  throw new ReplicasMismatchError(kind, name, existing, configured);
}

/**
 * Throws ReplicasMismatchError when a KV bucket just opened (created, or found as it was) does not
 * have the configured replicas: `Kvm.create` opens an existing bucket without looking at them.
 */
export async function checkBucketReplicas(
  kv: { status(): Promise<{ replicas: number }> },
  bucket: string,
  configured: number,
): Promise<void> {
  const existing = (await kv.status()).replicas || 1;
  if (existing !== configured) throw new ReplicasMismatchError("KV bucket", bucket, existing, configured);
}

/** How long a store's creation keeps trying while JetStream does not answer in time. */
export const STORE_SETUP_PATIENCE_MS = 30_000;

/**
 * Runs a JetStream set-up call (a stream's or bucket's creation or info), again while it times out,
 * for up to {@link STORE_SETUP_PATIENCE_MS}: on a cluster, creating a replicated store waits for
 * its group to elect a leader, which takes seconds on a busy machine, and a process starting then
 * must not give up on its first request.
 */
export function patientlySetUp<T>(call: () => Promise<T>, patienceMs = STORE_SETUP_PATIENCE_MS): Promise<T> {
  return throughElections(call, {
    patienceMs,
    retryIf: (error) => error instanceof Error && error.name === "TimeoutError",
  });
}
