/**
 * The tape's fold of working memory (src/runtime/checkpoints/fold.ts): a
 * turn's last WORKING_MEMORY_UPDATED is folded by reference (version, turn,
 * agent), never its content, so a replay checkpoint (a KV value rewritten
 * every few turns) holds none of what the user said.
 */
import { describe, expect, it } from "vitest";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { foldTape } from "../../src/runtime/checkpoints/fold.ts";
import { emptyTape, TapeState } from "../../src/runtime/checkpoints/state.ts";

const SESSION = "wm-fold";

/** A turn's events: each body given its envelope. */
const turnOf = (turnId: number, bodies: Pick<EngineEvent, "kind" | "payload">[]): EngineEvent[] =>
  bodies.map((body, seq) => ({ session_id: SESSION, turn_id: turnId, seq, ts_monotonic: seq, ...body }) as EngineEvent);

const update = (version: number, topic: string) => ({
  kind: "WORKING_MEMORY_UPDATED" as const,
  payload: {
    call_id: `notes.keeper.w0/${version}`,
    agent_id: "notes.keeper",
    version,
    changed: ["topic"],
    memory: { topic },
  },
});

describe("the tape's fold of working memory", () => {
  it("keeps the last update's version, turn and agent, and none of its content", () => {
    const state = foldTape(emptyTape(SESSION), [
      { kind: "turn", turn_id: 1, events: turnOf(1, [update(1, "canary-wm-first")]) },
      { kind: "turn", turn_id: 2, events: turnOf(2, []) },
      { kind: "turn", turn_id: 3, events: turnOf(3, [update(2, "canary-wm-second"), update(3, "canary-wm-third")]) },
      { kind: "turn", turn_id: 4, events: turnOf(4, []) },
    ]);
    expect(state.working_memory).toEqual({ version: 3, turn_id: 3, agent_id: "notes.keeper" });
    expect(JSON.stringify(state)).not.toMatch(/canary-wm/);
    // What a checkpoint stores parses back as the same state.
    expect(TapeState.parse(JSON.parse(JSON.stringify(state)))).toEqual(state);
  });

  it("has no working memory before an update", () => {
    const state = foldTape(emptyTape(SESSION), [{ kind: "turn", turn_id: 1, events: turnOf(1, []) }]);
    expect(state.working_memory).toBeUndefined();
  });
});
