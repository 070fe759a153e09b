import { busOptions, connectBus } from "../src/bus/connection.ts";
import { conclaveModel } from "../test/helpers/conclaveModel.ts";
import { startOpenAIServer } from "../test/helpers/openaiServer.ts";
import { type ClusterOptions, startBenchCluster } from "./cluster.ts";

/** The simulated model's latency: every call (agents, council, voice, critics) is answered after this long. */
export const SIMULATED_MODEL_MS = 50;

/**
 * A deployment in LLM mode against the simulated model: the model server,
 * the cluster (nats-server, workers, a runner) pointed at it without retries,
 * and a client connection named `name`. The caller closes all three.
 * `onLogLine` reads the processes' log lines (see ClusterOptions).
 */
export async function startSimulatedModelCluster(name: string, options: Pick<ClusterOptions, "onLogLine"> = {}) {
  const model = await startOpenAIServer(conclaveModel({ latencyMs: SIMULATED_MODEL_MS }));
  const cluster = await startBenchCluster({
    env: {
      CONCLAVE_LLM_BASE_URL: model.url,
      CONCLAVE_LLM_MODEL: `simulated-${SIMULATED_MODEL_MS}ms`,
      CONCLAVE_LLM_MAX_RETRIES: "0",
    },
    ...options,
  });
  const nc = await connectBus(busOptions("client", { servers: cluster.url, name }));
  return { model, cluster, nc };
}
