/**
 * A pipeline turn's memory commit gets the tools its calls invoked (issue 38,
 * item 7): PipelineTools' interceptor reads the turn's stored TOOL_CALL_FINISHED
 * events (an earlier attempt's, or this one's) into the episode's
 * `tools_invoked`. The live path is test/e2e/pipelineAgentTools.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { AgentDirectory } from "../../src/agents/directory.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { MemoryCommitRequest } from "../../src/contracts/memory.ts";
import { PipelineTools } from "../../src/runtime/toolCalls/pipelineTools.ts";
import type { ToolGate } from "../../src/runtime/toolCalls/toolGate.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";

/** A stored event of the turn: only its kind and payload matter here. */
const stored = (kind: string, payload: Record<string, unknown>) => ({ kind, payload }) as unknown as EngineEvent;
const call = (tool: string) => ({ call_id: `c-${tool}`, tool, agent_id: "acme.assistant" });

/** The episode the base's commitMemory is given, with `events` stored for the turn. */
async function committed(events: EngineEvent[]): Promise<MemoryCommitRequest["episode"]> {
  const base = localTurnServices();
  const interceptor = new PipelineTools({
    gate: {} as ToolGate,
    directory: Promise.resolve({ manifest: () => undefined } as unknown as AgentDirectory),
    policy: { rules: [] } as never,
  }).interceptor(base, { record: () => {}, flushed: async () => {}, stored: () => events });
  let given: MemoryCommitRequest["episode"] | undefined;
  const episode = {
    session_id: "s",
    turn_id: 2,
    user_text: "save my notes",
    response: "Saved.",
    intent: "task",
    ts: 0,
  };
  await interceptor.commitMemory?.({ request: { episode }, signal: new AbortController().signal }, async (input) => {
    given = input.request.episode;
    return { stored: true, summary: "" } as never;
  });
  if (!given) throw new Error("the commit did not reach the services below");
  return given;
}

describe("a pipeline turn's episode", () => {
  it("records each tool its calls invoked once, sorted, failed ones too, denied ones not", async () => {
    const episode = await committed([
      stored("TOOL_CALL_STARTED", { ...call("mcp_fs_write_file"), idempotency_key: "k" }),
      stored("TOOL_CALL_FINISHED", { ...call("mcp_fs_write_file"), ok: true, elapsed_ms: 1 }),
      stored("TOOL_CALL_FINISHED", { ...call("mcp_fs_read_text_file"), ok: false, elapsed_ms: 1 }),
      stored("TOOL_CALL_FINISHED", { ...call("mcp_fs_write_file"), ok: true, elapsed_ms: 1 }),
      stored("TOOL_CALL_DENIED", { ...call("disk_usage"), refusal: "denied", rule: "r", message: "no" }),
    ]);
    expect(episode.tools_invoked).toEqual(["mcp_fs_read_text_file", "mcp_fs_write_file"]);
  });

  it("names no tools when the turn invoked none", async () => {
    const episode = await committed([stored("TURN_STARTED", { user_input: "hi", turn_id: 2 })]);
    expect(episode).not.toHaveProperty("tools_invoked");
  });
});
