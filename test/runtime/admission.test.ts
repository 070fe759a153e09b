import { describe, expect, it } from "vitest";
import { Admission, admissionLimits } from "../../src/runtime/runner/admission.ts";
import { AdaptiveLimit } from "../../src/runtime/runner/runningLimit.ts";

/** Which turns have been let start, in order, as `<session>.<turn>`. */
function started(admission: Admission) {
  const order: string[] = [];
  const ask = (sessionId: string, turnId: number, tenant?: string) => {
    const { admitted, whenAdmitted } = admission.request(sessionId, turnId, tenant);
    void whenAdmitted.then((ok) => {
      if (ok) order.push(`${sessionId}.${turnId}`);
    });
    return admitted;
  };
  return { order, ask };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe("admission control", () => {
  it("runs up to maxRunning turns, queues the rest with their positions, and starts the next as one ends", async () => {
    const admission = new Admission({ maxRunning: 2, adaptive: false, maxQueued: 10 });
    const { order, ask } = started(admission);
    expect(ask("a", 1)).toEqual({ state: "running" });
    expect(ask("b", 1)).toEqual({ state: "running" });
    expect(ask("c", 1)).toEqual({ state: "queued", position: 1 });
    expect(ask("d", 1)).toEqual({ state: "queued", position: 2 });
    await settled();
    expect(order).toEqual(["a.1", "b.1"]);
    expect(admission.running).toBe(2);
    expect(admission.queued).toBe(2);
    admission.release("a", 1);
    await settled();
    expect(order).toEqual(["a.1", "b.1", "c.1"]);
    admission.release("b", 1);
    admission.release("c", 1);
    await settled();
    expect(order).toEqual(["a.1", "b.1", "c.1", "d.1"]);
    expect(admission.queued).toBe(0);
    admission.release("d", 1);
    expect(admission.running).toBe(0);
  });

  it("runs one turn per session: a session's next turn waits for its running one", async () => {
    const admission = new Admission({ maxRunning: 4, adaptive: false, maxQueued: 10 });
    const { order, ask } = started(admission);
    ask("a", 1);
    expect(ask("a", 2)).toEqual({ state: "queued", position: 1 });
    await settled();
    expect(order).toEqual(["a.1"]);
    admission.release("a", 1);
    await settled();
    expect(order).toEqual(["a.1", "a.2"]);
  });

  it("is fair: a chatty session with many turns waiting gets one place per round, a quiet one is not starved", async () => {
    const admission = new Admission({ maxRunning: 1, adaptive: false, maxQueued: 100 });
    const { order, ask } = started(admission);
    ask("blocker", 1);
    for (let turn = 1; turn <= 5; turn++) ask("chatty", turn);
    ask("quiet", 1);
    await settled();
    admission.release("blocker", 1);
    await settled();
    admission.release("chatty", 1);
    await settled();
    // The quiet session's one turn comes right after the chatty session's first, not after all five.
    expect(order).toEqual(["blocker.1", "chatty.1", "quiet.1"]);
  });

  it("answers busy, with a retry-after hint, once maxQueued turns wait; and not once one has started", async () => {
    const admission = new Admission({ maxRunning: 1, adaptive: false, maxQueued: 2 });
    const { ask } = started(admission);
    ask("a", 1);
    ask("b", 1);
    expect(admission.preview("x")).toEqual({ state: "queued", position: 2 });
    ask("c", 1);
    const refused = admission.preview("x");
    expect(refused.state).toBe("busy");
    expect(refused.state === "busy" && refused.retryAfterMs).toBeGreaterThan(0);
    admission.release("a", 1);
    expect(admission.preview("x")).toEqual({ state: "queued", position: 2 });
  });

  it("keeps a tenant within its quota while other tenants' turns run", async () => {
    const admission = new Admission({
      maxRunning: 3,
      adaptive: false,
      maxQueued: 10,
      tenantQuota: 1,
    });
    const { order, ask } = started(admission);
    expect(ask("acme-a", 1, "acme")).toEqual({ state: "running" });
    expect(ask("acme-b", 1, "acme").state).toBe("queued");
    expect(ask("globex-a", 1, "globex")).toEqual({ state: "running" });
    await settled();
    expect(order).toEqual(["acme-a.1", "globex-a.1"]);
    admission.release("acme-a", 1);
    await settled();
    expect(order).toEqual(["acme-a.1", "globex-a.1", "acme-b.1"]);
  });

  it("lets a cancelled or interrupting turn start at once, and tells a waiting turn that was released it will not", async () => {
    const admission = new Admission({ maxRunning: 1, adaptive: false, maxQueued: 10 });
    const { order, ask } = started(admission);
    ask("a", 1);
    ask("b", 1);
    const { whenAdmitted } = admission.request("c", 1);
    expect(admission.isWaiting("b", 1)).toBe(true);
    admission.admitNow("b", 1);
    admission.release("c", 1);
    await expect(whenAdmitted).resolves.toBe(false);
    await settled();
    expect(order).toEqual(["a.1", "b.1"]);
    expect(admission.queued).toBe(0);
    expect(admission.running).toBe(2);
  });
});

describe("admission limits", () => {
  it("come from the options, else the environment, else the number of cores", () => {
    expect(admissionLimits({ maxRunning: 3 }, {})).toEqual({
      maxRunning: 3,
      adaptive: false,
      maxQueued: 192,
    });
    expect(
      admissionLimits(
        {},
        { CONCLAVE_MAX_RUNNING_TURNS: "5", CONCLAVE_MAX_QUEUED_TURNS: "7", CONCLAVE_TENANT_QUOTA: "2" },
      ),
    ).toEqual({ maxRunning: 5, adaptive: false, maxQueued: 7, tenantQuota: 2 });
    expect(admissionLimits({}, {})).toMatchObject({ adaptive: false });
    expect(admissionLimits({ adaptive: true }, {})).toMatchObject({ adaptive: true });
    expect(admissionLimits({}, {}).maxRunning).toBeGreaterThanOrEqual(32);
    expect(() => admissionLimits({}, { CONCLAVE_MAX_RUNNING_TURNS: "lots" })).toThrow(
      'CONCLAVE_MAX_RUNNING_TURNS="lots" is invalid: must be a whole number from 1',
    );
  });
});

describe("the adaptive limit", () => {
  /** Feeds `turns` samples: each turn's run time from how many run at once (`runTime(running)`), all places used. */
  const drive = (limit: AdaptiveLimit, turns: number, runTime: (running: number) => number) => {
    for (let turn = 0; turn < turns; turn++) limit.sample(runTime(limit.value), limit.value);
  };

  it("grows to its maximum while running more does not slow turns down (their model sets the pace)", () => {
    const limit = new AdaptiveLimit({ initial: 16, min: 2, max: 128 });
    drive(limit, 2_000, () => 2_000);
    expect(limit.value).toBe(128);
  });

  it("shrinks once running more makes each turn slower (the machine is the limit), and stays near where they are not slowed", () => {
    const limit = new AdaptiveLimit({ initial: 8, min: 2, max: 128 });
    // Up to 16 at once a turn takes 300 ms; beyond, the cores are shared: time grows with the turns.
    drive(limit, 3_000, (running) => 300 * Math.max(1, running / 16));
    expect(limit.value).toBeGreaterThanOrEqual(8);
    expect(limit.value).toBeLessThanOrEqual(32);
  });

  it("does not grow while its places are not used", () => {
    const limit = new AdaptiveLimit({ initial: 16, min: 2, max: 128 });
    for (let turn = 0; turn < 2_000; turn++) limit.sample(300, 1);
    expect(limit.value).toBe(16);
  });
});
