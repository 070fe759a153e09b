import { describe, expect, it } from "vitest";
import { isInboxReply } from "../../src/bus/replies.ts";
import type { ServiceMsg } from "../../src/bus/service.ts";
import { IgnoredMessages } from "../../src/workers/requestGuard.ts";

describe("what a worker serves", () => {
  it("only requests with an inbox to answer on", () => {
    expect(isInboxReply("_INBOX_runner.abc.1", "worker")).toBe(true);
    expect(isInboxReply("_R_.xyz.1", "runner")).toBe(true);
    expect(isInboxReply(undefined, "worker")).toBe(false);
    expect(isInboxReply("", "worker")).toBe(false);
    expect(isInboxReply("$JS.ACK.CONCLAVE_EVENTS.push.1.2.3.4.5", "worker")).toBe(false);
    expect(isInboxReply("conclave.events.s.1", "worker")).toBe(false);
    expect(isInboxReply("$KV.conclave_sessions.counter.s", "worker")).toBe(false);
  });

  it("counts what it drops and says so once per window, not once per message", () => {
    let now = 0;
    const reports: [number, string][] = [];
    const ignored = new IgnoredMessages(
      (count, subject) => reports.push([count, subject]),
      1_000,
      () => now,
    );
    const msg = (subject: string) => ({ subject }) as ServiceMsg;
    now = 5_000;
    for (let i = 0; i < 100; i++) ignored.note(msg("conclave.agent.a"));
    now += 1_000;
    ignored.note(msg("conclave.agent.b"));
    expect(ignored.count).toBe(101);
    expect(reports).toEqual([
      [1, "conclave.agent.a"],
      [101, "conclave.agent.b"],
    ]);
  });
});
