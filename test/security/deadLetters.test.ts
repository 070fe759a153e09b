import { describe, expect, it } from "vitest";
import { DeadLetterLimiter, letterOf, MAX_EXCERPT, peerPayloadPolicy } from "../../src/bus/deadLetters.ts";
import { sha256 } from "./hostileHelpers.ts";

const encoder = new TextEncoder();
const message = (data: string, reason = "bad\ninput\r\nquoted") => ({
  subject: "conclave.turn.submit.s",
  data: encoder.encode(data),
  code: "bad_json",
  reason,
});

describe("a dead letter", () => {
  it("keeps a peer's payload only as its hash and length by default", () => {
    const letter = letterOf("submit", message('{"text": "secret"}'), peerPayloadPolicy({}));
    expect(letter).toMatchObject({ redacted: true, data: "", bytes: 18, truncated: false });
    expect(letter.sha256).toBe(sha256('{"text": "secret"}'));
    expect(letter.reason).toBe("bad input quoted");
  });

  it("keeps a bounded excerpt when the operator asks for excerpts", () => {
    const big = "x".repeat(MAX_EXCERPT * 3);
    const letter = letterOf("worker", message(big), peerPayloadPolicy({ CONCLAVE_DLQ_PAYLOADS: "excerpt" }));
    expect(letter).toMatchObject({ redacted: false, truncated: true, bytes: big.length });
    expect(letter.data).toHaveLength(MAX_EXCERPT);
  });

  it("keeps the runtime's own WAL entries, so a poison turn can be resubmitted", () => {
    const entry = JSON.stringify({ session_id: "s", turn_id: 1, text: "hello" });
    expect(letterOf("poison", message(entry), "redacted")).toMatchObject({ redacted: false, data: entry });
  });

  it("bounds the reason to one line", () => {
    const letter = letterOf("submit", message("{", `${"why\n".repeat(1_000)}`), "redacted");
    expect(letter.reason.length).toBeLessThanOrEqual(512);
    expect(letter.reason).not.toMatch(/[\r\n]/);
  });
});

describe("the dead-letter rate limit", () => {
  it("admits a burst per source and subject, then a steady rate, and counts what it dropped", () => {
    let now = 0;
    const limiter = new DeadLetterLimiter(3, 2, () => now);
    const taken = Array.from({ length: 10 }, () => limiter.take("worker conclave.agent.a"));
    expect(taken.filter(Boolean)).toHaveLength(3);
    // Another subject has a bucket of its own.
    expect(limiter.take("worker conclave.agent.b")).toEqual({ suppressed: 0 });
    now += 500; // one token back at 2 a second
    expect(limiter.take("worker conclave.agent.a")).toEqual({ suppressed: 7 });
    expect(limiter.take("worker conclave.agent.a")).toBeNull();
  });
});
