import { afterEach, describe, expect, it, vi } from "vitest";
import { Admission, admissionLimits } from "../../src/runtime/runner/admission.ts";
import { IntakeBacklog } from "../../src/runtime/runner/intakeBacklog.ts";
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
    const admission = new Admission({ maxRunning: 2, adaptive: false, maxQueued: 10, maxQueueWaitMs: 30_000 });
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
    const admission = new Admission({ maxRunning: 4, adaptive: false, maxQueued: 10, maxQueueWaitMs: 30_000 });
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
    const admission = new Admission({ maxRunning: 1, adaptive: false, maxQueued: 100, maxQueueWaitMs: 30_000 });
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
    const admission = new Admission({ maxRunning: 1, adaptive: false, maxQueued: 2, maxQueueWaitMs: 30_000 });
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
      maxQueueWaitMs: 30_000,
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
    const admission = new Admission({ maxRunning: 1, adaptive: false, maxQueued: 10, maxQueueWaitMs: 30_000 });
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
      maxQueueWaitMs: 30_000,
    });
    expect(
      admissionLimits(
        {},
        { CONCLAVE_MAX_RUNNING_TURNS: "5", CONCLAVE_MAX_QUEUED_TURNS: "7", CONCLAVE_TENANT_QUOTA: "2" },
      ),
    ).toEqual({ maxRunning: 5, adaptive: false, maxQueued: 7, maxQueueWaitMs: 30_000, tenantQuota: 2 });
    expect(admissionLimits({}, { CONCLAVE_MAX_QUEUE_WAIT_MS: "5000" }).maxQueueWaitMs).toBe(5_000);
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

describe("admission at the intake, for bursts", () => {
  it("counts the turns it stored before any reaches the runner: a burst gets running, then queued, then busy", () => {
    const admission = new Admission({ maxRunning: 2, adaptive: false, maxQueued: 3, maxQueueWaitMs: 30_000 });
    const backlog = new IntakeBacklog(admission);
    // Forty submissions at once: each preview is decided before any is stored (the WAL writes are concurrent).
    const answers = Array.from({ length: 40 }, (_, i) => backlog.preview(`s${i}`));
    expect(answers.slice(0, 2)).toEqual([{ state: "running" }, { state: "running" }]);
    expect(answers.slice(2, 5)).toEqual([
      { state: "queued", position: 1 },
      { state: "queued", position: 2 },
      { state: "queued", position: 3 },
    ]);
    expect(answers.slice(5).every((answer) => answer.state === "busy")).toBe(true);
    for (const answer of answers.slice(5)) expect((answer as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0);
    // Stored: still counted; a refused one held no place.
    for (let i = 0; i < 5; i++) backlog.stored(`s${i}`, 1);
    expect(backlog.unseen).toBe(5);
    expect(backlog.preview("late").state).toBe("busy");
  });

  it("hands a turn to the runner's own count when the runner takes it, and frees a place when it ends elsewhere", () => {
    const admission = new Admission({ maxRunning: 1, adaptive: false, maxQueued: 1, maxQueueWaitMs: 30_000 });
    const backlog = new IntakeBacklog(admission);
    expect(backlog.preview("a")).toEqual({ state: "running" });
    backlog.stored("a", 1);
    expect(backlog.preview("b")).toEqual({ state: "queued", position: 1 });
    backlog.stored("b", 1);
    expect(backlog.preview("c").state).toBe("busy");
    // The runner takes a.1: it runs, counted by the runner's queue now, not twice.
    backlog.seen("a", 1);
    admission.request("a", 1);
    expect(backlog.unseen).toBe(1);
    expect(backlog.preview("c").state).toBe("busy");
    // b.1 ran on another runner and ended there: its place is free.
    backlog.seen("b", 1);
    expect(backlog.preview("c")).toEqual({ state: "queued", position: 1 });
  });

  it("does not count a turn the runner took before the WAL's answer reached the intake", () => {
    const admission = new Admission({ maxRunning: 1, adaptive: false, maxQueued: 1, maxQueueWaitMs: 30_000 });
    const backlog = new IntakeBacklog(admission);
    backlog.preview("a");
    backlog.seen("a", 1);
    admission.request("a", 1);
    backlog.stored("a", 1);
    expect(backlog.unseen).toBe(0);
    expect(backlog.preview("b")).toEqual({ state: "queued", position: 1 });
  });

  it("gives a place back for a turn that was not stored, and forgets a turn no runner was seen with after its TTL", () => {
    let now = 0;
    const admission = new Admission({ maxRunning: 1, adaptive: false, maxQueued: 1, maxQueueWaitMs: 30_000 });
    const backlog = new IntakeBacklog(admission, 1_000, () => now);
    backlog.preview("a");
    backlog.withdrawn();
    expect(backlog.unseen).toBe(0);
    backlog.preview("a");
    backlog.stored("a", 1);
    backlog.preview("b");
    backlog.stored("b", 1);
    expect(backlog.preview("c").state).toBe("busy");
    now = 1_001;
    expect(backlog.unseen).toBe(0);
    expect(backlog.preview("c")).toEqual({ state: "running" });
  });

  describe("its measured rate", () => {
    afterEach(() => vi.useRealTimers());
    /**
     * Keeps `concurrency` turns running, each held `runMs` on a faked clock, their ends spread evenly (as
     * a saturated runner's are), until `turns` have ended.
     */
    const run = (admission: Admission, concurrency: number, runMs: number, turns: number) => {
      const open: string[] = [];
      let next = 0;
      const start = () => {
        const session = `r${next++}`;
        admission.request(session, 1);
        open.push(session);
      };
      for (let i = 0; i < concurrency; i++) {
        start();
        vi.advanceTimersByTime(runMs / concurrency);
      }
      for (let ended = 0; ended < turns; ended++) {
        admission.release(open.shift() as string, 1);
        start();
        vi.advanceTimersByTime(runMs / concurrency);
      }
      for (const session of open.splice(0)) admission.release(session, 1);
    };

    it("is the turns seen running at once over their run time, never its places over an idle run", () => {
      vi.useFakeTimers({ toFake: ["performance"] });
      const admission = new Admission({ maxRunning: 64, adaptive: false, maxQueued: 100_000, maxQueueWaitMs: 30_000 });
      // Warmed up one turn at a time, 300 ms each: about 3.3 turns/s, whatever its 64 places.
      run(admission, 1, 300, 60);
      expect(admission.startsPerSecond).toBeCloseTo(1000 / 300, 0);
      // 3.3/s × 30 s, not 64 places ÷ 0.3 s × 30 s = 6400
      expect(admission.queueLimit).toBeGreaterThanOrEqual(95);
      expect(admission.queueLimit).toBeLessThanOrEqual(100);
      // Under a burst its 64 places run at once and each turn takes 4.7 s: 13.6 turns/s.
      run(admission, 64, 4_700, 200);
      expect(admission.startsPerSecond).toBeCloseTo(64 / 4.7, 0);
      expect(admission.queueLimit).toBeGreaterThan(380);
      expect(admission.queueLimit).toBeLessThan(420);
    });

    it("refuses busy a turn it expects to end after its submitter's patience, and says when one would fit", () => {
      vi.useFakeTimers({ toFake: ["performance"] });
      const admission = new Admission({ maxRunning: 2, adaptive: false, maxQueued: 1_000, maxQueueWaitMs: 60_000 });
      run(admission, 2, 1_000, 100); // 2 turns/s, 1 s each
      expect(admission.startsPerSecond).toBeCloseTo(2, 1);
      admission.request("a", 1);
      admission.request("b", 1);
      for (let i = 0; i < 20; i++) admission.request(`w${i}`, 1); // 20 waiting: the next one starts in about 10.5 s
      expect(admission.preview("x", undefined, 0, 30_000)).toEqual({ state: "queued", position: 21 });
      expect(admission.preview("x")).toEqual({ state: "queued", position: 21 });
      const refused = admission.preview("x", undefined, 0, 5_000);
      expect(refused.state).toBe("busy");
      // Within 5 s, less its 1 s run, 8 turns start: it fits once 13 of the 20 waiting have (6.5 s at 2/s).
      const retryAfterMs = refused.state === "busy" ? refused.retryAfterMs : 0;
      expect(retryAfterMs).toBeGreaterThan(6_000);
      expect(retryAfterMs).toBeLessThan(7_000);
    });
  });

  it("bounds the queue by what the runner starts within maxQueueWaitMs at its measured rate", async () => {
    const admission = new Admission({ maxRunning: 1, adaptive: false, maxQueued: 1_000, maxQueueWaitMs: 2_000 });
    // Before any turn ran, the mean run time is taken as 1 s: one place starts two turns in 2 s.
    expect(admission.queueLimit).toBe(2);
    admission.request("a", 1);
    expect(admission.preview("b")).toEqual({ state: "queued", position: 1 });
    admission.request("b", 1);
    admission.request("c", 1);
    expect(admission.preview("d").state).toBe("busy");
    await settled();
  });
});
