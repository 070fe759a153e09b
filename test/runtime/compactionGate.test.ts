/**
 * The compaction gate in the runner's tool gate: at critical context
 * pressure, before compaction has run, a write is refused (TOOL_CALL_DENIED,
 * rule compaction_gate) and a read goes on; once compaction ran, both go on.
 */
import { describe, expect, it } from "vitest";
import type { GateState } from "../../src/context/budget.ts";
import type { ToolManifest } from "../../src/contracts/tool.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { Slots } from "../../src/runtime/toolCalls/slots.ts";
import { type ToolHost, TurnToolCalls } from "../../src/runtime/toolCalls/turnToolCalls.ts";
import { ToolPolicy } from "../../src/tools/policy.ts";

const manifest = (name: string, effect: "read" | "write"): ToolManifest => ({
  name,
  description: name,
  input_schema: { type: "object" },
  risk: "safe",
  effect,
  dry_run: false,
  rollback: false,
});
const TOOLS = { note_read: manifest("note_read", "read"), note_write: manifest("note_write", "write") };

/** The tools, answered in this process (the gate's own host interface: no server involved). */
const host: ToolHost = {
  manifest: (name) => TOOLS[name as keyof typeof TOOLS],
  slots: (size) => new Slots(size),
  invoke: async (call) => ({
    tool: call.tool,
    call_id: call.call_id,
    result: { done: call.tool },
    elapsed_ms: 0,
    worker: "here",
  }),
};

function gate(state: GateState) {
  const records: TurnRecord[] = [];
  const calls = new TurnToolCalls({
    policies: [ToolPolicy.parse({})],
    allowed: new Set(Object.keys(TOOLS)),
    record: (body) => records.push(body),
    screenArgs: async (args) => args,
    flushed: async () => {},
    signal: new AbortController().signal,
    compactionGate: () => state,
  });
  let index = 0;
  const call = (tool: string) =>
    calls.call({ session_id: "s", turn_id: 1, agent_id: "acme.writer", index: index++, tool, args: {} }, host);
  return { call, records };
}

const critical = { level: "critical" as const, ratio: 0.97, usage_tokens: 9_700, total_tokens: 10_000 };

describe("the compaction gate", () => {
  it("refuses a write at critical pressure before compaction has run, and lets a read go on", async () => {
    const { call, records } = gate({ pressure: critical, compacted: false });
    const write = await call("note_write");
    expect(write).toMatchObject({ ok: false, refusal: "denied" });
    expect(write.ok === false && write.message).toMatch(/critical pressure \(97% of 10000 tokens\).*compacted first/);
    expect(records.find((record) => record.kind === "TOOL_CALL_DENIED")?.payload).toMatchObject({
      tool: "note_write",
      rule: "compaction_gate",
    });
    await expect(call("note_read")).resolves.toMatchObject({ ok: true, result: { done: "note_read" } });
  });

  it("lets a write go on once compaction has run, or below critical pressure", async () => {
    await expect(gate({ pressure: critical, compacted: true }).call("note_write")).resolves.toMatchObject({ ok: true });
    const compact = { ...critical, level: "compact" as const, ratio: 0.85, usage_tokens: 8_500 };
    await expect(gate({ pressure: compact, compacted: false }).call("note_write")).resolves.toMatchObject({
      ok: true,
    });
  });
});
