import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ToolManifest } from "../../src/contracts/tool.ts";
import { decideToolCall, delegationDepthOf, parallelSlotsOf, ToolPolicy } from "../../src/tools/policy.ts";
import { toolPolicyFromEnv } from "../../src/tools/policyFile.ts";

const tool = (overrides: Partial<ToolManifest> = {}): ToolManifest => ({
  name: "t",
  description: "",
  risk: "standard",
  effect: "read",
  input_schema: {},
  dry_run: false,
  rollback: false,
  ...overrides,
});
const call = (overrides: Partial<ToolManifest> = {}, facts = {}) => ({
  tool: tool(overrides),
  turnCalls: 0,
  toolCalls: 0,
  ...facts,
});
const policy = (input: object) => ToolPolicy.parse(input);

describe("the tool policy", () => {
  it("allows by default, and the stricter of two policies wins, naming its rule", () => {
    expect(decideToolCall([], call())).toEqual({ verdict: "allow", rule: "default" });
    const operator = policy({ tools: { t: "allow" } });
    const recipe = policy({ tools: { t: "deny" } });
    expect(decideToolCall([operator, recipe], call())).toMatchObject({ verdict: "deny", rule: "tools.t" });
    expect(decideToolCall([operator, policy({ default: "approve" })], call())).toMatchObject({ verdict: "approve" });
  });

  it("asks approval for critical and sensitive tools unless every policy allows them by name", () => {
    expect(decideToolCall([policy({})], call({ risk: "critical" }))).toMatchObject({
      verdict: "approve",
      rule: "risk: critical",
    });
    expect(decideToolCall([policy({ sensitive: ["t"] })], call())).toMatchObject({
      verdict: "approve",
      rule: "sensitive",
    });
    const waived = policy({ tools: { t: "allow" } });
    expect(decideToolCall([waived], call({ risk: "critical" }))).toMatchObject({ verdict: "allow" });
    expect(decideToolCall([waived, policy({})], call({ risk: "critical" }))).toMatchObject({ verdict: "approve" });
  });

  it("gates writes, not reads, on the plan's confidence; a missing confidence is below any gate", () => {
    const gated = policy({ min_confidence: 0.8 });
    expect(decideToolCall([gated], call({ effect: "read" }))).toMatchObject({ verdict: "allow" });
    expect(decideToolCall([gated], call({ effect: "write" }))).toMatchObject({
      verdict: "approve",
      rule: "min_confidence",
    });
    expect(decideToolCall([gated], call({ effect: "write" }, { confidence: 0.9 }))).toMatchObject({ verdict: "allow" });
    expect(
      decideToolCall(
        [policy({ min_confidence: 0.8, below_confidence: "deny" })],
        call({ effect: "write" }, { confidence: 0.5 }),
      ),
    ).toMatchObject({
      verdict: "deny",
      refusal: "denied",
    });
  });

  it("refuses past the turn's and the tool's call limits", () => {
    expect(decideToolCall([policy({ max_calls_per_turn: 2 })], call({}, { turnCalls: 2 }))).toMatchObject({
      verdict: "deny",
      refusal: "limit",
      rule: "max_calls_per_turn",
    });
    expect(decideToolCall([policy({ max_calls_per_tool: 1 })], call({}, { toolCalls: 1 }))).toMatchObject({
      rule: "max_calls_per_tool",
    });
  });

  it("takes the lowest parallel slots and delegation depth of the policies in force", () => {
    expect(parallelSlotsOf([policy({ parallel_slots: 3 }), policy({ parallel_slots: 1 })])).toBe(1);
    expect(delegationDepthOf([policy({}), policy({ max_delegation_depth: 1 })])).toBe(1);
    expect(delegationDepthOf([])).toBe(3);
  });
});

describe("CONCLAVE_TOOL_POLICY", () => {
  const dir = mkdtempSync(join(tmpdir(), "conclave-policy-"));

  it("reads a YAML or JSON policy file", () => {
    const file = join(dir, "policy.yaml");
    writeFileSync(file, "tools:\n  disk_usage: deny\nparallel_slots: 2\n");
    expect(toolPolicyFromEnv({ CONCLAVE_TOOL_POLICY: file })).toMatchObject({
      tools: { disk_usage: "deny" },
      parallel_slots: 2,
    });
    expect(toolPolicyFromEnv({})).toBeUndefined();
  });

  it("refuses a file that does not fit, naming the field, and one that cannot be read", () => {
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ tools: { disk_usage: "maybe" } }));
    expect(() => toolPolicyFromEnv({ CONCLAVE_TOOL_POLICY: file })).toThrow(/tools\.disk_usage/);
    expect(() => toolPolicyFromEnv({ CONCLAVE_TOOL_POLICY: join(dir, "missing.json") })).toThrow(/cannot read/);
  });
});
