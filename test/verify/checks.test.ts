/**
 * The verify checks as pure functions over stored messages: a recipe run
 * whose output does not match its declared interface.outputs fails with the
 * field as evidence; a message that is not an event, a repeated seq and a
 * second terminal event fail the contiguity check.
 */
import { describe, expect, it } from "vitest";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { checkContiguity, checkRecipeOutputs } from "../../src/verify/checks.ts";
import type { LoggedMessage } from "../../src/verify/logReader.ts";

const S = "checks-1";
let position = 0;
const logged = (turnId: number, seq: number, kind: string, payload: unknown): LoggedMessage => ({
  position: ++position,
  subject: `conclave.events.${S}.${turnId}`,
  event: { session_id: S, turn_id: turnId, seq, ts_monotonic: 1, kind, payload } as EngineEvent,
});
const completed = (turnId: number, seq: number, output?: Record<string, unknown>) =>
  logged(turnId, seq, "TURN_COMPLETED", {
    total_time_ms: 1,
    response: "",
    outcome: { status: "Complete" },
    usage: { prompt_tokens: 0, completion_tokens: 0, by_actor: {} },
    ...(output ? { output } : {}),
  });
const started = (turnId: number, outputs: unknown) =>
  logged(turnId, 0, "RECIPE_STARTED", { document: { interface: { outputs } } });

describe("recipe_outputs", () => {
  it("fails a run whose final blackboard misses a required output, naming it", () => {
    const schema = { type: "object", required: ["reply"], properties: { reply: { type: "string" } } };
    const result = checkRecipeOutputs([
      started(1, schema),
      completed(1, 1, { reply: "ok" }),
      started(2, schema),
      completed(2, 1, { draft: "no reply" }),
      started(3, undefined),
      completed(3, 1, {}),
    ]);
    expect(result.ok).toBe(false);
    expect(result.evidence[0]).toBe(
      "2 recipe run output(s) checked against interface.outputs, 1 without a declared outputs schema",
    );
    expect(result.evidence[1]).toMatch(/^turn 2: output does not match interface.outputs: reply: /);
  });
});

describe("log_contiguity", () => {
  it("reports a message that is not an event, a repeated seq and a second terminal event", () => {
    const result = checkContiguity([
      logged(1, 0, "TURN_STARTED", {}),
      logged(1, 0, "TURN_STARTED", {}),
      completed(1, 1),
      completed(1, 2),
      { position: 99, subject: `conclave.events.${S}.1`, invalid: "not JSON" },
    ]);
    expect(result.ok).toBe(false);
    expect(result.evidence).toEqual([
      "5 stored messages, 1 turns, 1 with their terminal event",
      `position 99 (conclave.events.${S}.1): not a valid event: not JSON`,
      "turn 1: seq 0 stored twice",
      "turn 1: 2 terminal events (seq 1, 2)",
      "turn 1: 1 event(s) after its TURN_COMPLETED (seq 1): TURN_COMPLETED@2",
    ]);
  });
});
