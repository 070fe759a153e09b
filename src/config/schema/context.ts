/**
 * The context arena's variables (docs/context.md): a session's token budget,
 * the pressure ratios, and the cap on one tool output. Spread into
 * CONFIG_SCHEMA by schema.ts.
 */
import { z } from "zod";
import { type ConfigVariable, flag, variable, wholeNumber } from "../variable.ts";

/** A ratio in (0, 1], from its decimal text ("0.8"). */
const ratio = z
  .string()
  .regex(/^(0(\.\d+)?|1(\.0+)?|\.\d+)$/, "must be a decimal ratio above 0 and at most 1 (e.g. 0.8)")
  .transform(Number)
  .pipe(z.number().gt(0, "must be a decimal ratio above 0 and at most 1 (e.g. 0.8)").max(1));

/** The context arena's variables, in the order `conclave config` lists them. */
export const CONTEXT_VARIABLES = {
  CONCLAVE_CONTEXT_BUDGET_TOKENS: variable({
    group: "runner",
    schema: wholeNumber(256, 10_000_000, " (tokens)"),
    default: 16_000,
    doc: "A session's context budget: the most tokens the context planned for an agent may take (docs/context.md).",
  }),
  CONCLAVE_CONTEXT_COMPACT_RATIO: variable({
    group: "runner",
    schema: ratio,
    default: 0.8,
    doc: "Context pressure (demand / budget) at which a session's older turns are compacted into a summary.",
  }),
  CONCLAVE_CONTEXT_CRITICAL_RATIO: variable({
    group: "runner",
    schema: ratio,
    default: 0.95,
    doc: "Context pressure at which heavy tool calls are refused until compaction has run; above the compact ratio.",
  }),
  CONCLAVE_CONTEXT_TOOL_OUTPUT_TOKENS: variable({
    group: "runner",
    schema: wholeNumber(16, 1_000_000, " (tokens)"),
    default: 1_000,
    doc: "A tool output longer than this many tokens is truncated, with a note, before it enters a context.",
  }),
  CONCLAVE_COMPACTION_INSTRUCTIONS: variable({
    group: "runner",
    schema: z.string().trim().min(1, "must not be empty").max(4_000, "must be at most 4000 characters"),
    defaultText: "none",
    doc: "What a compaction request's summary is asked to keep when the request gives no instructions (recorded in its COMPACTION_REQUESTED; docs/context.md).",
  }),
  CONCLAVE_RECALL_MODE: variable({
    group: "runner",
    schema: z.enum(["primary", "fallback"], { error: "must be one of primary, fallback" }),
    default: "primary",
    doc: "The recall zone under pressure: primary always plans it; fallback skips it when the context pressure is compact or critical (docs/context.md).",
  }),
  CONCLAVE_CONTEXT_ADAPTIVE_ZONES: variable({
    group: "runner",
    schema: flag,
    default: true,
    doc: "Zone caps adapt to a session: a zone losing items to its cap 3 turns running grows it (up to twice its share), and gives it back when its demand fits again (docs/context.md).",
  }),
  CONCLAVE_CONTEXT_MAX_ENTRIES: variable({
    group: "runner",
    schema: wholeNumber(1, 10_000, " (items)"),
    doc: "The arena's entry limit: the most items a planned context keeps; past it the least important go, from the last zone (docs/context.md). Unset: no limit.",
  }),
} as const satisfies Record<string, ConfigVariable>;
