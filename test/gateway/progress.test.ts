/**
 * A call's events as progress: a line per event worth one, stream chunks
 * gathered into one update per batch, nothing for events without a line.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { CHUNK_BATCH_MS, type ProgressUpdate, progressReporter } from "../../src/gateway/progress.ts";
import { toolNameOf } from "../../src/gateway/recipeTools.ts";

let seq = 0;
const event = (kind: string, payload: Record<string, unknown>) =>
  ({ session_id: "s", turn_id: 1, seq: seq++, ts_monotonic: 0, kind, payload }) as unknown as EngineEvent;
const chunk = (delta: string, stream_id = "voice") => event("STREAM_CHUNK", { stream_id, index: 0, delta });

afterEach(() => {
  vi.useRealTimers();
});

describe("progress from a call's events", () => {
  it("sends one numbered update per event worth a line, and one per batch of a stream's chunks", () => {
    const updates: ProgressUpdate[] = [];
    const progress = progressReporter((update) => updates.push(update));
    progress.event(event("TURN_STAGE_CHANGED", { stage: "SCREEN" }));
    progress.event(event("STREAM_START", { stream_id: "voice", content_type: "text/plain", attempt: 1 }));
    for (const delta of ["That ", "sounds ", "hard."]) progress.event(chunk(delta));
    progress.event(event("STREAM_END", { stream_id: "voice", chunks: 3 }));
    progress.event(chunk("a plan", "planner:default"));
    progress.event(chunk(" of two steps", "planner:default"));
    progress.flush();
    expect(updates).toEqual([
      { progress: 1, message: "▸ SCREEN" },
      { progress: 2, message: "voice › That sounds hard." },
      { progress: 3, message: "planner:default › a plan of two steps" },
    ]);
  });

  it("sends gathered chunks after a batch's time, while the stream goes on", () => {
    vi.useFakeTimers();
    const updates: ProgressUpdate[] = [];
    const progress = progressReporter((update) => updates.push(update));
    progress.event(chunk("Hello"));
    progress.event(chunk(", you"));
    expect(updates).toEqual([]);
    vi.advanceTimersByTime(CHUNK_BATCH_MS);
    progress.event(chunk("!"));
    progress.flush();
    expect(updates.map((update) => update.message)).toEqual(["voice › Hello, you", "voice › !"]);
  });
});

describe("a recipe's tool name", () => {
  it("is its name, with anything MCP does not allow made '_', cut to 64 characters", () => {
    expect(toolNameOf("support-triage")).toBe("support-triage");
    expect(toolNameOf("weekly report: v2")).toBe("weekly_report__v2");
    expect(toolNameOf("x".repeat(100))).toHaveLength(64);
  });
});
