/**
 * A session's cost summary, folded from its event log: each turn's
 * TURN_COMPLETED carries the tokens it used per actor (its `usage`: the
 * agents, council, voice and critics, and memory's `memory:extraction` and
 * `memory:embeddings`), each AGENT_COMPLETED the skills the agent had loaded.
 * Tokens are priced on the model the call recorded, else the actor's model
 * in the price table (prices.ts); tokens of an unpriced model are counted,
 * never guessed at.
 */
import type { EngineEvent } from "../contracts/events.ts";
import type { Usage } from "../contracts/usage.ts";
import { modelOfActor, type PriceTable, priceOf, UNKNOWN_MODEL } from "./prices.ts";

/** Tokens and what they cost. */
export interface CostAmount {
  prompt_tokens: number;
  completion_tokens: number;
  /** US dollars of the priced tokens (0 when none is priced). */
  usd: number;
  /** Tokens (prompt and completion) on models the price table does not price: not in `usd`. */
  unpriced_tokens: number;
}

/** One row of a summary: a turn, an actor, a model or a skill, with its amount. */
export interface CostRow extends CostAmount {
  name: string;
}

/** A session's cost: in total, and per turn, actor, model and skill (rows in first-seen order). */
export interface CostSummary {
  session_id: string;
  /** Turns with a TURN_COMPLETED (the others used nothing recorded yet). */
  turns: number;
  total: CostAmount;
  by_turn: CostRow[];
  /** Per actor (`agent:<id>`, `council`, `voice`, `critic:<name>`), with the model it was priced on. */
  by_actor: (CostRow & { model: string })[];
  by_model: CostRow[];
  /**
   * Per skill: the tokens of the agent answers that had the skill loaded. An
   * answer with two skills counts for both, so these rows do not add up to the total.
   */
  by_skill: CostRow[];
}

/** Options of {@link summarizeCost}. */
export interface SummarizeOptions {
  /** The model of each actor (`agent:<id>` or bare agent id), when the caller knows it (e.g. from the agents' manifests). */
  models?: Readonly<Record<string, string>>;
}

const zero = (): CostAmount => ({ prompt_tokens: 0, completion_tokens: 0, usd: 0, unpriced_tokens: 0 });

function add(into: CostAmount, usage: Usage, usd: number | null): void {
  into.prompt_tokens += usage.prompt_tokens;
  into.completion_tokens += usage.completion_tokens;
  if (usd === null) into.unpriced_tokens += usage.prompt_tokens + usage.completion_tokens;
  else into.usd += usd;
}

function rowOf<R extends CostRow>(rows: Map<string, R>, name: string, make: () => R): R {
  let row = rows.get(name);
  if (!row) {
    row = make();
    rows.set(name, row);
  }
  return row;
}

/** The cost of a session's events (read in log order), priced with `table`. */
export function summarizeCost(
  sessionId: string,
  events: Iterable<EngineEvent>,
  table: PriceTable,
  options: SummarizeOptions = {},
): CostSummary {
  const total = zero();
  const turns = new Map<string, CostRow>();
  const actors = new Map<string, CostRow & { model: string }>();
  const models = new Map<string, CostRow>();
  const skills = new Map<string, CostRow>();
  // The skills each agent had loaded, per turn, until the turn's TURN_COMPLETED prices them.
  const skillsByTurn = new Map<number, Map<string, string[]>>();
  for (const event of events) {
    if (event.kind === "AGENT_COMPLETED" && event.payload.skills?.length) {
      const agents = skillsByTurn.get(event.turn_id) ?? new Map<string, string[]>();
      agents.set(`agent:${event.payload.agent_id}`, event.payload.skills);
      skillsByTurn.set(event.turn_id, agents);
    }
    if (event.kind !== "TURN_COMPLETED") continue;
    const turn = rowOf(turns, String(event.turn_id), () => ({ name: String(event.turn_id), ...zero() }));
    for (const [actor, usage] of Object.entries(event.payload.usage.by_actor)) {
      // The model the call recorded; an older log's (or a call that names none): the actor's in the price table.
      const model = usage.model ?? modelOfActor(actor, table, options.models);
      const usd = priceOf(model, usage.prompt_tokens, usage.completion_tokens, table);
      add(total, usage, usd);
      add(turn, usage, usd);
      add(
        rowOf(actors, actor, () => ({ name: actor, model, ...zero() })),
        usage,
        usd,
      );
      add(
        rowOf(models, model, () => ({ name: model, ...zero() })),
        usage,
        usd,
      );
      for (const skill of skillsByTurn.get(event.turn_id)?.get(actor) ?? [])
        add(
          rowOf(skills, skill, () => ({ name: skill, ...zero() })),
          usage,
          usd,
        );
    }
    skillsByTurn.delete(event.turn_id);
  }
  return {
    session_id: sessionId,
    turns: turns.size,
    total,
    by_turn: [...turns.values()],
    by_actor: [...actors.values()],
    by_model: [...models.values()],
    by_skill: [...skills.values()],
  };
}

/**
 * An unpriced summary (as a replay checkpoint folds it: every actor on the `unknown` model) priced
 * with `table`, as {@link summarizeCost} would have priced its turns: each actor on its model, the
 * model rows regrouped from the actor rows. Null when that cannot be exact: a turn's or a skill's
 * row adds up several actors' tokens, so it can be priced afterwards only when one model is priced
 * and every actor runs on it, or when no actor's model is priced.
 */
export function priceSummary(
  unpriced: CostSummary,
  table: PriceTable,
  options: SummarizeOptions = {},
): CostSummary | null {
  const modelOf = new Map(
    unpriced.by_actor.map((row) => [
      row.name,
      row.model !== UNKNOWN_MODEL ? row.model : modelOfActor(row.name, table, options.models),
    ]),
  );
  const models = new Set(modelOf.values());
  const priced = [...models].filter((model) => table.models[model] !== undefined);
  if (priced.length > 0 && models.size > 1) return null;
  const only = priced[0];
  const reprice = <R extends CostAmount>(row: R): R => {
    const usd = only === undefined ? null : priceOf(only, row.prompt_tokens, row.completion_tokens, table);
    const tokens = row.prompt_tokens + row.completion_tokens;
    return { ...row, usd: usd ?? 0, unpriced_tokens: usd === null ? tokens : 0 };
  };
  const byModel = new Map<string, CostRow>();
  for (const row of unpriced.by_actor) {
    const name = modelOf.get(row.name) ?? UNKNOWN_MODEL;
    const into = rowOf(byModel, name, () => ({ name, ...zero() }));
    into.prompt_tokens += row.prompt_tokens;
    into.completion_tokens += row.completion_tokens;
  }
  return {
    ...unpriced,
    total: reprice({ ...unpriced.total }),
    by_turn: unpriced.by_turn.map(reprice),
    by_actor: unpriced.by_actor.map((row) => reprice({ ...row, model: modelOf.get(row.name) ?? UNKNOWN_MODEL })),
    by_model: [...byModel.values()].map(reprice),
    by_skill: unpriced.by_skill.map(reprice),
  };
}

/** An amount as people read it: `$0.0123, 1 200 in / 340 out tokens (+ 80 unpriced)`. */
export function describeAmount(amount: CostAmount): string {
  const tokens = `${amount.prompt_tokens} in / ${amount.completion_tokens} out tokens`;
  const unpriced = amount.unpriced_tokens > 0 ? ` (${amount.unpriced_tokens} unpriced)` : "";
  return `$${amount.usd.toFixed(4)}, ${tokens}${unpriced}`;
}

/** The summary as lines of text: the total, then a table per grouping. */
export function describeCost(summary: CostSummary): string[] {
  const lines = [`session ${summary.session_id}: ${summary.turns} turns, ${describeAmount(summary.total)}`];
  const section = (title: string, rows: readonly (CostRow & { model?: string })[]) => {
    if (rows.length === 0) return;
    lines.push(`${title}:`);
    const width = Math.max(...rows.map((row) => row.name.length));
    for (const row of rows)
      lines.push(`  ${row.name.padEnd(width)}  ${describeAmount(row)}${row.model ? ` [${row.model}]` : ""}`);
  };
  section("by actor", summary.by_actor);
  section("by model", summary.by_model);
  section("by skill", summary.by_skill);
  section("by turn", summary.by_turn);
  return lines;
}
