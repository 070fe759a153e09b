import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Tests that start nats-server and worker processes need more than the default 5 s.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two cores: keep process-heavy suites from starving each other.
    maxWorkers: 2,
  },
});
