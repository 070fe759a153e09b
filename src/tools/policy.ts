import { z } from "zod";
import { type ToolManifest, ToolName, type ToolRefusal } from "../contracts/tool.ts";

/** What a policy says of a tool: call it, refuse it, or call it only once a person approves. */
export const ToolVerdict = z.enum(["allow", "deny", "approve"]);
export type ToolVerdict = z.infer<typeof ToolVerdict>;

/**
 * How tool calls are governed: in a recipe's `policy.tools` and in the
 * runner's options (`RunnerOptions.tools.policy`). Both apply, and for
 * every call the stricter one wins (deny over approve over allow, the lower
 * limit, the higher confidence gate): a recipe can tighten what the operator
 * allows, never loosen it.
 */
export const ToolPolicy = z.object({
  /** What a tool not named in `tools` gets. Default `allow`. */
  default: ToolVerdict.default("allow"),
  /** Per tool: `allow`, `deny` or `approve`. Naming a `critical` or sensitive tool `allow` waives its approval. */
  tools: z.record(ToolName, ToolVerdict).default({}),
  /** Tools that need approval unless named `allow` (as every `critical` tool does). */
  sensitive: z.array(ToolName).default([]),
  /**
   * Write calls whose plan confidence is below this need approval (or are
   * refused, see `below_confidence`); reads are not gated. Default: no gate.
   */
  min_confidence: z.number().min(0).max(1).optional(),
  /** What a call below `min_confidence` gets. Default `approve`. */
  below_confidence: z.enum(["approve", "deny"]).default("approve"),
  /** Most tool calls in one turn. Default 32. */
  max_calls_per_turn: z.number().int().min(0).default(32),
  /** Most calls of one tool in one turn. Default: no limit beyond the turn's. */
  max_calls_per_tool: z.number().int().min(0).optional(),
  /** Most tool calls running at once in one session. Default 4. */
  parallel_slots: z.number().int().min(1).default(4),
  /** Every write tool runs its dry run instead (the turn returns the plan). Default false. */
  dry_run: z.boolean().default(false),
  /** How deep agents may delegate to agents (`ctx.delegate`); deeper is a hard error. Default 3. */
  max_delegation_depth: z.number().int().min(0).max(20).default(3),
  /** The role an approval must be answered in (`conclave approve --role`). Default `operator`. */
  approver_role: z.string().min(1).max(64).default("operator"),
});
/** A tool policy, defaults filled in. */
export type ToolPolicy = z.infer<typeof ToolPolicy>;
/** A tool policy as written (every field optional). */
export type ToolPolicyInput = z.input<typeof ToolPolicy>;

/** The policy in force when nothing is configured. */
export const DEFAULT_TOOL_POLICY: ToolPolicy = ToolPolicy.parse({});

/** What one call is, for the policy: the tool, how sure the plan is, how many calls the turn has made. */
export interface ToolCallFacts {
  tool: ToolManifest;
  /** The plan's confidence (0–1); absent counts as below any gate. */
  confidence?: number;
  /** Calls this turn made before this one, in all and of this tool. */
  turnCalls: number;
  toolCalls: number;
}

/** What the policy decided, and which rule decided it (`tools.disk_usage`, `risk: critical`, `max_calls_per_turn`…). */
export type ToolDecision =
  | { verdict: "allow"; rule: string }
  | { verdict: "deny"; refusal: Extract<ToolRefusal, "denied" | "limit">; rule: string; message: string }
  | { verdict: "approve"; rule: string; message: string };

const STRICTNESS: Record<ToolDecision["verdict"], number> = { allow: 0, approve: 1, deny: 2 };

/** One policy's decision on one call. */
export function decideOne(policy: ToolPolicy, call: ToolCallFacts): ToolDecision {
  const name = call.tool.name;
  if (call.turnCalls >= policy.max_calls_per_turn)
    return {
      verdict: "deny",
      refusal: "limit",
      rule: "max_calls_per_turn",
      message: `the turn made its ${policy.max_calls_per_turn} tool calls`,
    };
  if (policy.max_calls_per_tool !== undefined && call.toolCalls >= policy.max_calls_per_tool)
    return {
      verdict: "deny",
      refusal: "limit",
      rule: "max_calls_per_tool",
      message: `the turn made its ${policy.max_calls_per_tool} calls of ${name}`,
    };
  const named = policy.tools[name];
  const verdict = named ?? policy.default;
  const rule = named ? `tools.${name}` : "default";
  if (verdict === "deny") return { verdict, refusal: "denied", rule, message: `policy denies ${name} (${rule})` };
  if (verdict === "approve") return { verdict, rule, message: `policy asks approval for ${name} (${rule})` };
  if (!named && call.tool.risk === "critical")
    return { verdict: "approve", rule: "risk: critical", message: `${name} is a critical tool: it needs approval` };
  if (!named && policy.sensitive.includes(name))
    return { verdict: "approve", rule: "sensitive", message: `${name} is listed as sensitive: it needs approval` };
  const gated = policy.min_confidence !== undefined && call.tool.effect === "write";
  if (gated && (call.confidence ?? 0) < policy.min_confidence!) {
    const message = `the plan's confidence ${call.confidence ?? "(none given)"} is below ${policy.min_confidence}`;
    return policy.below_confidence === "deny"
      ? { verdict: "deny", refusal: "denied", rule: "min_confidence", message }
      : { verdict: "approve", rule: "min_confidence", message };
  }
  return { verdict: "allow", rule };
}

/** Every policy in force decides; the strictest decision wins (the first of equals). */
export function decideToolCall(policies: readonly ToolPolicy[], call: ToolCallFacts): ToolDecision {
  const decisions = (policies.length > 0 ? policies : [DEFAULT_TOOL_POLICY]).map((policy) => decideOne(policy, call));
  return decisions.reduce((strictest, decision) =>
    STRICTNESS[decision.verdict] > STRICTNESS[strictest.verdict] ? decision : strictest,
  );
}

/** The most calls that may run at once in a session under these policies (the lowest). */
export const parallelSlotsOf = (policies: readonly ToolPolicy[]): number =>
  Math.min(...(policies.length > 0 ? policies : [DEFAULT_TOOL_POLICY]).map((policy) => policy.parallel_slots));

/** The deepest delegation these policies allow (the lowest). */
export const delegationDepthOf = (policies: readonly ToolPolicy[]): number =>
  Math.min(...(policies.length > 0 ? policies : [DEFAULT_TOOL_POLICY]).map((policy) => policy.max_delegation_depth));

/** Whether write tools run as dry runs under these policies (any of them asks). */
export const dryRunOf = (policies: readonly ToolPolicy[]): boolean => policies.some((policy) => policy.dry_run);
