/**
 * How `conclave send` and `conclave events` show a turn's memory retrieval:
 * a log written now names what was retrieved by reference (no text), a log
 * written before embeds it; either reads as counts, the first marked as references.
 */
import { describe, expect, it } from "vitest";
import { renderEvent } from "../../src/client/renderEvent.ts";
import { EngineEvent } from "../../src/contracts/events.ts";

const retrieved = (payload: unknown): EngineEvent =>
  EngineEvent.parse({
    session_id: "s",
    turn_id: 2,
    seq: 3,
    ts_monotonic: 1,
    kind: "MEMORY_RETRIEVED",
    payload,
  }) as EngineEvent;

describe("a MEMORY_RETRIEVED line", () => {
  it("counts the references of a log written now, and says the text is read from memory", () => {
    const event = retrieved({
      refs: { episodes: [1], facts: ["fact.lives_in", "fact.sister"], threads: [], procedures: [] },
      ledgers: true,
    });
    expect(renderEvent(event)).toBe(
      "      memory: 1 episode(s), 2 fact(s), 0 open thread(s) (by reference: read from memory while kept)",
    );
  });

  it("counts what an older log embeds", () => {
    const episode = { session_id: "s", turn_id: 1, user_text: "hi", response: "hello", intent: "chat", ts: 1 };
    const event = retrieved({ episodes: [episode], user_facts: ["lives in Lisbon"], open_threads: ["call the bank"] });
    expect(renderEvent(event)).toBe("      memory: 1 episode(s), 1 fact(s), 1 open thread(s)");
  });
});
