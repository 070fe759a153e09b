import { describe, expect, it } from "vitest";
import { patientlySetUp } from "../../src/nats/replicas.ts";

/** A set-up call that fails with `errors` in turn, then answers "ready". */
function failingThen(...errors: Error[]) {
  let calls = 0;
  return {
    call: async () => {
      calls += 1;
      const error = errors.shift();
      if (error) throw error;
      return "ready";
    },
    calls: () => calls,
  };
}

describe("patientlySetUp", () => {
  it("rides out what JetStream answers during an election: a process starting after a heal does not exit", async () => {
    // The messages nats-server 2.9 gave a worker started just after a partition healed (issue 34).
    const setUp = failingThen(
      new Error("JetStream system temporarily unavailable"),
      new Error("jetstream is not enabled"),
      Object.assign(new Error("timeout"), { name: "TimeoutError" }),
    );
    await expect(patientlySetUp(setUp.call, 10_000)).resolves.toBe("ready");
    expect(setUp.calls()).toBe(4);
  });

  it("gives up at once on an answer that is not an election's", async () => {
    const setUp = failingThen(new Error("stream name already in use with a different configuration"));
    await expect(patientlySetUp(setUp.call, 10_000)).rejects.toThrow(/already in use/);
    expect(setUp.calls()).toBe(1);
  });

  it("throws the last error once its patience is spent", async () => {
    const unavailable = () => new Error("JetStream system temporarily unavailable");
    const setUp = failingThen(...Array.from({ length: 100 }, unavailable));
    await expect(patientlySetUp(setUp.call, 300)).rejects.toThrow(/temporarily unavailable/);
    expect(setUp.calls()).toBeGreaterThan(1);
  });
});
