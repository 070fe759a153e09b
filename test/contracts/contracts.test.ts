import { describe, expect, it } from "vitest";
import { EngineEvent, EVENT_KINDS, EventPayloads } from "../../src/contracts/events.ts";
import { wireJsonSchemas } from "../../src/contracts/jsonSchemas.ts";
import { TurnOutcome, TurnSubmission, turnOutcome } from "../../src/contracts/turn.ts";

describe("wire contracts", () => {
  it("exports a JSON Schema for every wire message", () => {
    const schemas = wireJsonSchemas();
    expect(Object.keys(schemas)).toEqual(
      expect.arrayContaining([
        "TurnSubmission.schema.json",
        "EngineEvent.schema.json",
        "TurnAck.schema.json",
        "ErrorReply.schema.json",
      ]),
    );
    for (const schema of Object.values(schemas)) {
      expect(schema).toMatchObject({ $schema: "https://json-schema.org/draft/2020-12/schema" });
    }
    const submission = schemas["TurnSubmission.schema.json"] as {
      required: string[];
      properties: Record<string, unknown>;
    };
    // `text`, or a `recipe` to run (either one: the runner refuses a submission with neither).
    expect(submission.required ?? []).toEqual([]);
    expect(Object.keys(submission.properties).sort()).toEqual([
      "idempotency_key",
      "on_busy",
      "patience_ms",
      "pipeline",
      "recipe",
      "text",
      "user_id",
    ]);
  });

  it("the EngineEvent schema lists every event kind", () => {
    const schema = wireJsonSchemas()["EngineEvent.schema.json"] as { oneOf?: unknown[]; anyOf?: unknown[] };
    expect((schema.oneOf ?? schema.anyOf)?.length).toBe(EVENT_KINDS.length);
    expect(EVENT_KINDS).toEqual(Object.keys(EventPayloads));
  });

  it("validates an event's payload against its kind", () => {
    const base = { session_id: "s", turn_id: 1, seq: 0, ts_monotonic: 1 };
    expect(
      EngineEvent.safeParse({ ...base, kind: "WAVE_STARTED", payload: { wave: 0, agent_count: 1, agents: ["a.b"] } })
        .success,
    ).toBe(true);
    expect(EngineEvent.safeParse({ ...base, kind: "WAVE_STARTED", payload: { stage: "ingest" } }).success).toBe(false);
    expect(EngineEvent.safeParse({ ...base, kind: "NOT_A_KIND", payload: {} }).success).toBe(false);
    expect(
      EngineEvent.safeParse({ ...base, seq: -1, kind: "TURN_STAGE_CHANGED", payload: { stage: "ingest" } }).success,
    ).toBe(false);
  });

  it("trims submissions and refuses empty or unknown-typed ones", () => {
    expect(TurnSubmission.parse({ text: "  hi  " }).text).toBe("hi");
    expect(TurnSubmission.safeParse({ text: " " }).success).toBe(false);
    expect(TurnSubmission.safeParse({ text: "hi", idempotency_key: "" }).success).toBe(false);
  });

  it("a turn with warnings is a PartialSuccess, without is Complete", () => {
    expect(turnOutcome([])).toEqual({ status: "Complete" });
    const partial = turnOutcome([{ stage: "context", code: "timeout", message: "slow" }]);
    expect(partial.status).toBe("PartialSuccess");
    expect(TurnOutcome.safeParse({ status: "PartialSuccess", warnings: [] }).success).toBe(false);
  });
});
