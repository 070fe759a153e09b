import { describe, expect, it } from "vitest";
import { checkWhen, dueTimesBetween, InvalidScheduleError, nextDueAfter } from "../../src/schedules/nextDue.ts";

const at = (iso: string) => Date.parse(iso);

describe("next due time", () => {
  it("fires an `at` once, after which nothing is due", () => {
    const when = { at: at("2030-01-01T00:00:00Z") };
    expect(nextDueAfter(when, at("2029-12-31T00:00:00Z"))).toBe(when.at);
    expect(nextDueAfter(when, when.at)).toBeNull();
  });

  it("counts an interval from its start, one interval after it first", () => {
    const when = { every_ms: 1_000, start_ms: 10_000 };
    expect(nextDueAfter(when, 10_000)).toBe(11_000);
    expect(nextDueAfter(when, 11_000)).toBe(12_000);
    expect(nextDueAfter(when, 11_500)).toBe(12_000);
    expect(nextDueAfter(when, 0)).toBe(11_000);
  });

  it("reads a cron expression in its time zone (09:00 in New York is 14:00 UTC in winter, 13:00 in summer)", () => {
    const winter = nextDueAfter({ cron: "0 9 * * *", tz: "America/New_York" }, at("2030-01-10T12:00:00Z"));
    expect(new Date(winter ?? 0).toISOString()).toBe("2030-01-10T14:00:00.000Z");
    const summer = nextDueAfter({ cron: "0 9 * * *", tz: "America/New_York" }, at("2030-07-10T12:00:00Z"));
    expect(new Date(summer ?? 0).toISOString()).toBe("2030-07-10T13:00:00.000Z");
    const utc = nextDueAfter({ cron: "0 9 * * *" }, at("2030-07-10T12:00:00Z"));
    expect(new Date(utc ?? 0).toISOString()).toBe("2030-07-11T09:00:00.000Z");
  });

  it("refuses a bad cron expression or time zone with invalid_request", () => {
    expect(() => checkWhen({ cron: "not a cron" })).toThrow(InvalidScheduleError);
    expect(() => checkWhen({ cron: "0 9 * * *", tz: "Mars/Olympus" })).toThrow(/bad cron/);
  });
});

describe("missed due times", () => {
  it("keeps the earliest `keep` of an interval's and defers the rest", () => {
    const when = { every_ms: 60_000, start_ms: 0 };
    expect(dueTimesBetween(when, 0, 200_000, 2)).toEqual({
      fire: [60_000, 120_000],
      deferred: { count: 1, first: 180_000, last: 180_000 },
    });
    expect(dueTimesBetween(when, 0, 200_000, 5)).toEqual({ fire: [60_000, 120_000, 180_000], deferred: null });
    expect(dueTimesBetween(when, 180_000, 200_000, 1)).toEqual({ fire: [], deferred: null });
  });

  it("counts a long downtime of a short interval without enumerating it", () => {
    const result = dueTimesBetween({ every_ms: 100, start_ms: 0 }, 0, 86_400_000, 1);
    expect(result.fire).toEqual([100]);
    expect(result.deferred).toEqual({ count: 863_999, first: 200, last: 86_400_000 });
  });

  it("does the same for cron due times", () => {
    const result = dueTimesBetween({ cron: "0 * * * *" }, at("2030-01-01T00:30:00Z"), at("2030-01-01T03:10:00Z"), 2);
    expect(result.fire.map((due) => new Date(due).toISOString())).toEqual([
      "2030-01-01T01:00:00.000Z",
      "2030-01-01T02:00:00.000Z",
    ]);
    expect(result.deferred).toEqual({ count: 1, first: at("2030-01-01T03:00:00Z"), last: at("2030-01-01T03:00:00Z") });
  });
});
