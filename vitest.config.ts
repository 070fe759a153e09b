import { configDefaults, defineConfig } from "vitest/config";

/**
 * The three-node cluster tests (test/cluster/) kill and restart nats-server nodes under load, and the
 * rolling-upgrade test (test/upgrade/) builds the previous release and runs its processes beside the
 * current ones under load: they run on their own, one file at a time, after the rest (`npm run
 * test:cluster`, which .ci/run calls), so the suite's other files do not starve them of the CPU their
 * elections and builds need on a two-core machine.
 */
const clusterOnly = process.env.CONCLAVE_TEST_CLUSTER === "1";
/** The files of that second, serial run. */
const serialRun = ["test/cluster/**", "test/upgrade/**"];

export default defineConfig({
  test: {
    include: clusterOnly ? serialRun.map((dir) => `${dir}/*.test.ts`) : ["test/**/*.test.ts"],
    exclude: clusterOnly ? configDefaults.exclude : [...configDefaults.exclude, ...serialRun],
    // Tests that start nats-server and worker processes need more than the default 5 s.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // The offline model unless a test sets one (modelEnvironment.ts); one pack of this checkout for
    // the whole run, shared by the files that install it.
    globalSetup: ["test/setup/modelEnvironment.ts", "test/package/packCache.ts"],
    // Two cores: keep process-heavy suites from starving each other. The serial run's files run one at
    // a time: each runs several runners and workers under load (a cluster's elections need CPU).
    maxWorkers: clusterOnly ? 1 : 2,
  },
});
