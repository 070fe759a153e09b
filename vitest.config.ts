import { configDefaults, defineConfig } from "vitest/config";

/**
 * The three-node cluster tests (test/cluster/) kill and restart nats-server nodes under load: they
 * run on their own, after the rest (`npm run test:cluster`, which .ci/run calls), so the suite's
 * other files do not starve the cluster of the CPU its elections need on a two-core machine.
 */
const clusterOnly = process.env.CONCLAVE_TEST_CLUSTER === "1";

export default defineConfig({
  test: {
    include: clusterOnly ? ["test/cluster/**/*.test.ts"] : ["test/**/*.test.ts"],
    exclude: clusterOnly ? configDefaults.exclude : [...configDefaults.exclude, "test/cluster/**"],
    // Tests that start nats-server and worker processes need more than the default 5 s.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // One pack of this checkout for the whole run, shared by the files that install it.
    globalSetup: ["test/package/packCache.ts"],
    // Two cores: keep process-heavy suites from starving each other. The cluster files run one at a
    // time: each runs three nodes, three runners and three workers under load, and elections need CPU.
    maxWorkers: clusterOnly ? 1 : 2,
  },
});
