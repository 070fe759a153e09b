/**
 * The cost variables (docs/cost.md): the price table's file and a session's
 * budget. Spread into CONFIG_SCHEMA by schema.ts.
 */
import { z } from "zod";
import { type ConfigVariable, text, variable } from "../variable.ts";

/** A positive amount of US dollars, from its decimal text ("2.50"). */
const dollars = z
  .string()
  .regex(/^(\d+(\.\d*)?|\.\d+)$/, "must be an amount of US dollars above 0 (e.g. 2.50)")
  .transform(Number)
  .pipe(z.number().gt(0, "must be an amount of US dollars above 0 (e.g. 2.50)"));

/** The cost variables, in the order `conclave config` lists them. */
export const COST_VARIABLES = {
  CONCLAVE_PRICES: variable({
    group: "runner",
    schema: text,
    defaultText: "none: every model unpriced (tokens only)",
    doc: "A JSON or YAML price table: per-model prices per million input/output tokens, and optional tenant budgets (docs/cost.md).",
  }),
  CONCLAVE_SESSION_BUDGET_USD: variable({
    group: "runner",
    schema: dollars,
    defaultText: "none",
    doc: "Once a session has spent this many US dollars (priced by CONCLAVE_PRICES), its next turn is refused (budget_exceeded).",
  }),
} as const satisfies Record<string, ConfigVariable>;
