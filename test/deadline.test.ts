import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { withDeadline } from "../src/deadline.ts";

class Late extends Error {}

describe("withDeadline", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("settles as the work does, and leaves no timer behind", async () => {
    await expect(
      withDeadline(
        1_000,
        async () => 42,
        () => new Late(),
      ),
    ).resolves.toBe(42);
    await expect(
      withDeadline(
        1_000,
        () => Promise.reject(new Error("boom")),
        () => new Late(),
      ),
    ).rejects.toThrow("boom");
    await expect(
      withDeadline(
        1_000,
        () => {
          throw new Error("at once");
        },
        () => new Late(),
      ),
    ).rejects.toThrow("at once");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("rejects with the caller's error when the time is up, and tells the work to stop", async () => {
    let seen: AbortSignal | undefined;
    const call = withDeadline(
      500,
      (signal) => {
        seen = signal;
        return new Promise<never>(() => {});
      },
      () => new Late("too slow"),
    );
    vi.advanceTimersByTime(500);
    await expect(call).rejects.toBeInstanceOf(Late);
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(Late);
  });

  it("stops when the caller's signal fires first, with onAbort's error", async () => {
    const caller = new AbortController();
    const call = withDeadline(
      5_000,
      () => new Promise<never>(() => {}),
      () => new Late(),
      { signal: caller.signal, onAbort: (reason) => new Error(`cancelled: ${String(reason)}`) },
    );
    caller.abort("by the user");
    await expect(call).rejects.toThrow("cancelled: by the user");
    expect(vi.getTimerCount()).toBe(0);
  });
});
