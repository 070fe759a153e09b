/**
 * Clustered JetStream's variables (docs/operations.md, "A three-node cluster").
 * Spread into CONFIG_SCHEMA by schema.ts.
 */
import { type ConfigVariable, flag, text, variable, wholeNumber } from "../variable.ts";

/** The cluster's variables, in the order `conclave config` lists them. */
export const CLUSTER_VARIABLES = {
  CONCLAVE_SHARED_STEPS: variable({
    group: "process",
    schema: flag,
    default: true,
    doc: "Workers share step answers in KV conclave_step_replies, so a takeover's re-ask reaching another worker of the step joins the call instead of making it again; nothing on the turn's path waits on it (docs/protocol.md). 0: each worker joins only its own calls.",
  }),
  CONCLAVE_REPLICAS: variable({
    group: "nats",
    schema: wholeNumber(1, 5, " (JetStream replicas)"),
    default: 1,
    doc: "Replicas of every Conclave stream and KV bucket: 3 on a three-node cluster (`conclave up --cluster 3` sets it), 1 on a single server. An existing one with other replicas is refused, never changed.",
  }),
  CONCLAVE_NATS_MONITOR: variable({
    group: "nats",
    schema: text,
    doc: "The nodes' HTTP monitoring endpoints (`http://host:port`, comma-separated), where `conclave status` reads the JetStream meta leader when `--monitor` is not given. `conclave up --cluster N` sets it for its processes and `--exec`.",
  }),
} as const satisfies Record<string, ConfigVariable>;
