import { z } from "zod";
import { readDataFile } from "../config/dataFile.ts";
import { setting } from "../config/load.ts";
import { describeIssues } from "../contracts/issues.ts";
import { ConclaveError } from "../errors.ts";

const perMillion = z.number().min(0).max(1_000_000);

/** One model's prices, in US dollars per million tokens. */
export const ModelPrice = z.strictObject({
  input_per_million: perMillion,
  output_per_million: perMillion,
});
export type ModelPrice = z.infer<typeof ModelPrice>;

/** A price file's content. */
export const PriceTable = z.strictObject({
  /** Prices by model name (the name the agent's worker calls, e.g. `gpt-4o-mini`). */
  models: z.record(z.string().min(1), ModelPrice).default({}),
  /**
   * The model of each actor (`agent:<id>`, `council`, `voice`, `critic:<name>`, or a bare agent id),
   * for actors whose model the caller does not give: the log records tokens, not models.
   */
  actors: z.record(z.string().min(1), z.string().min(1)).default({}),
  /** The model of an actor neither the caller nor `actors` names. Absent: `unknown` (unpriced). */
  default_model: z.string().min(1).optional(),
  /** Budgets per tenant, in US dollars: a session of the tenant that has spent its budget gets no further turn. */
  tenants: z.record(z.string().min(1), z.strictObject({ budget_usd: z.number().gt(0) })).default({}),
});
export type PriceTable = z.infer<typeof PriceTable>;

/** The model name an actor gets when nothing names its model. */
export const UNKNOWN_MODEL = "unknown";

/** The default price table: empty, every model unpriced. */
export const emptyPriceTable = (): PriceTable => ({ models: {}, actors: {}, tenants: {} });

/** A price table that cannot be read or does not fit; the one-line message names the field. */
export class PriceTableError extends ConclaveError<"config"> {
  constructor(message: string) {
    super("config", message);
  }
}

/** Parses a price table (already parsed JSON/YAML); `source` names it in errors. */
export function parsePriceTable(raw: unknown, source = "price table"): PriceTable {
  const checked = PriceTable.safeParse(raw ?? {});
  if (!checked.success) throw new PriceTableError(`${source}: ${describeIssues(checked.error, { join: "; " })}`);
  return checked.data;
}

/** Reads a JSON or YAML price file. */
export function readPriceTable(file: string): PriceTable {
  const raw = readDataFile(file, (reason) => new PriceTableError(`cannot read the price table ${file}: ${reason}`));
  return parsePriceTable(raw, `price table ${file}`);
}

/** The price table CONCLAVE_PRICES names, or the empty default. */
export function priceTableFromEnv(env: NodeJS.ProcessEnv = process.env): PriceTable {
  const file = setting(env, "CONCLAVE_PRICES");
  return file ? readPriceTable(file) : emptyPriceTable();
}

/** The model an actor ran on: the caller's map, then the table's `actors` (full or bare agent id), then its default. */
export function modelOfActor(actor: string, table: PriceTable, known: Readonly<Record<string, string>> = {}): string {
  const bare = actor.startsWith("agent:") ? actor.slice("agent:".length) : actor;
  return (
    known[actor] ?? known[bare] ?? table.actors[actor] ?? table.actors[bare] ?? table.default_model ?? UNKNOWN_MODEL
  );
}

/** What tokens cost on a model, or null when the model is unpriced. */
export function priceOf(
  model: string,
  promptTokens: number,
  completionTokens: number,
  table: PriceTable,
): number | null {
  const price = table.models[model];
  if (!price) return null;
  return (promptTokens * price.input_per_million + completionTokens * price.output_per_million) / 1_000_000;
}
