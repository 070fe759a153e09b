/**
 * A session's context budget: how many tokens the context planned for an
 * agent may take, the pressure a demand puts on it, and the compaction gate.
 *
 * Pressure is `usage / total`, where usage is the larger of what the session's
 * full context would take (counted by the planner) and what the model last
 * reported it was sent (`prompt_tokens` of an agent reply): the model's own
 * count wins when it is larger, since it includes what the planner does not
 * see (system prompt, tool schemas).
 *
 *   normal    below `compact_ratio`
 *   compact   from `compact_ratio`: older turns are compacted into a summary
 *   critical  from `critical_ratio`: heavy tool calls are refused until compaction has run
 */
import { setting } from "../config/load.ts";
import { ConfigError } from "../config/variable.ts";
import type { ContextBudget } from "../contracts/context.ts";
import type { ToolEffect } from "../contracts/tool.ts";
import { ConclaveError } from "../errors.ts";

/** The budget when nothing is configured (the variables' defaults). */
export const DEFAULT_CONTEXT_BUDGET: ContextBudget = {
  total_tokens: 16_000,
  compact_ratio: 0.8,
  critical_ratio: 0.95,
  tool_output_tokens: 1_000,
};

/** A budget whose ratios are out of order: one line naming both. */
export function checkedBudget(budget: ContextBudget): ContextBudget {
  if (!(budget.compact_ratio < budget.critical_ratio))
    throw new ConfigError(
      `CONCLAVE_CONTEXT_COMPACT_RATIO (${budget.compact_ratio}) must be below CONCLAVE_CONTEXT_CRITICAL_RATIO (${budget.critical_ratio})`,
    );
  return budget;
}

/** The budget the environment configures (CONCLAVE_CONTEXT_*). */
export function contextBudgetFromEnv(env: NodeJS.ProcessEnv = process.env): ContextBudget {
  return checkedBudget({
    total_tokens: setting(env, "CONCLAVE_CONTEXT_BUDGET_TOKENS"),
    compact_ratio: setting(env, "CONCLAVE_CONTEXT_COMPACT_RATIO"),
    critical_ratio: setting(env, "CONCLAVE_CONTEXT_CRITICAL_RATIO"),
    tool_output_tokens: setting(env, "CONCLAVE_CONTEXT_TOOL_OUTPUT_TOKENS"),
  });
}

/** How hard a usage presses on the budget. */
export type PressureLevel = "normal" | "compact" | "critical";

/** A usage against a budget. */
export interface PressureStatus {
  level: PressureLevel;
  /** usage / total, unbounded (above 1: the unplanned context would not fit). */
  ratio: number;
  usage_tokens: number;
  total_tokens: number;
}

/** The pressure a usage (in tokens) puts on a budget. */
export function pressureOf(usageTokens: number, budget: ContextBudget): PressureStatus {
  const ratio = usageTokens / budget.total_tokens;
  const level: PressureLevel =
    ratio >= budget.critical_ratio ? "critical" : ratio >= budget.compact_ratio ? "compact" : "normal";
  return { level, ratio, usage_tokens: usageTokens, total_tokens: budget.total_tokens };
}

/** What the compaction gate knows of a session: its pressure, and whether compaction has run since it rose. */
export interface GateState {
  pressure: PressureStatus;
  /** Compaction ran after the pressure was last measured (the next measure will show its effect). */
  compacted: boolean;
}

/** What a tool call asks of the context: a write, or an output that may be large. */
export interface ToolWeight {
  name: string;
  effect: ToolEffect;
  /** The tool may return more than the budget's tool_output_tokens (a file read, a search). */
  large_output?: boolean;
}

/** A heavy tool call refused at critical context pressure before compaction has run. */
export class CompactionRequiredError extends ConclaveError<"forbidden"> {
  /** Stable reason, beside the wire code `forbidden`. */
  readonly reason = "compaction_required" as const;
  constructor(tool: string, pressure: PressureStatus) {
    super(
      "forbidden",
      `tool ${tool} refused: the session's context is at critical pressure (${Math.round(pressure.ratio * 100)}% of ${pressure.total_tokens} tokens) and must be compacted first`,
    );
  }
}

/** True for a call the gate holds back at critical pressure: a write, or one whose output may be large. */
export const isHeavy = (tool: ToolWeight): boolean => tool.effect === "write" || tool.large_output === true;

/**
 * The compaction gate: returns when the call may go on, throws
 * CompactionRequiredError for a heavy call at critical pressure until
 * compaction has run. Light calls (reads with small outputs) always pass: an
 * agent may still look things up while the context is compacted.
 */
export function checkCompactionGate(state: GateState, tool: ToolWeight): void {
  if (state.pressure.level === "critical" && !state.compacted && isHeavy(tool))
    throw new CompactionRequiredError(tool.name, state.pressure);
}
