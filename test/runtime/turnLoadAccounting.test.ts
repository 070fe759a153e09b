/**
 * The turn-order count of test/helpers/turnLoad.ts, which the membership and cluster fault runs
 * hold to zero: it must see a turn that started before its previous turn completed.
 */
import { describe, expect, it } from "vitest";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { type StoredEvent, turnOrderViolations } from "../helpers/turnLoad.ts";

/** A session's log from `[turn, kind]` pairs, in stream order (stream sequences 1, 2, …). */
const log = (entries: [number, "TURN_STARTED" | "TURN_RESUMED" | "TURN_COMPLETED"][]): StoredEvent[] =>
  entries.map(([turnId, kind], index) => ({
    streamSeq: index + 1,
    event: { session_id: "s", turn_id: turnId, seq: 0, ts_monotonic: index, kind, payload: {} } as EngineEvent,
  }));

describe("turn-order violations in a session's log", () => {
  it("none when each turn starts after the previous one completed, a takeover included", () => {
    const entries = log([
      [1, "TURN_STARTED"],
      [1, "TURN_RESUMED"],
      [1, "TURN_COMPLETED"],
      [2, "TURN_STARTED"],
      [2, "TURN_COMPLETED"],
    ]);
    expect(turnOrderViolations("s", entries)).toEqual([]);
  });

  it("one when turn 2 starts before turn 1 completed, even if it starts again after", () => {
    const entries = log([
      [1, "TURN_STARTED"],
      [2, "TURN_STARTED"],
      [1, "TURN_COMPLETED"],
      [2, "TURN_RESUMED"],
      [2, "TURN_STARTED"],
      [2, "TURN_COMPLETED"],
    ]);
    expect(turnOrderViolations("s", entries)).toEqual([
      "s: turn 2 started (stream seq 2) before turn 1 completed (stream seq 3)",
    ]);
  });

  it("one when a turn starts after a previous turn that never completed", () => {
    expect(
      turnOrderViolations(
        "s",
        log([
          [1, "TURN_STARTED"],
          [2, "TURN_STARTED"],
        ]),
      ),
    ).toHaveLength(1);
  });
});
