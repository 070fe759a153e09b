/**
 * Supplemental injection (docs/context.md, "Supplemental injection"): how much of a text the next
 * turn's `supplemental` zone takes, and the supplements a turn consumes. Pure: the runner plans a
 * text with it (a plan writes nothing; a commit records what it planned), and the turn's arena
 * takes the committed supplements its session has not consumed yet.
 *
 * The room for a text is the zone's cap (a share of the budget, zones.ts), less the zone's heading
 * and the line around the text; and no more than what the budget leaves after the rest of the
 * context: the caller's count of it (`usage_tokens`) when given, else the other zones' floors. At
 * critical pressure (a usage past the critical ratio) the budget is `compact_ratio × budget`, as
 * the planner fits it.
 */
import type { AgentContext } from "../contracts/agent.ts";
import type { ArenaPolicy, ContextArenaState } from "../contracts/context.ts";
import type {
  RecordedSupplement,
  SupplementCitation,
  SupplementCommitted,
  SupplementPlan,
} from "../contracts/supplement.ts";
import { InvalidRequestError } from "../errors.ts";
import { pressureOf } from "./budget.ts";
import type { ContextPlan } from "./planner.ts";
import { type Tokenizer, tokenizerFor } from "./tokenizer.ts";
import { ZONE_SHARES, ZONE_TITLES, ZONES, zoneLimits } from "./zones.ts";

/** What a text is planned with: its scope, the rest of the context's tokens, and (a commit's) the tokens allowed. */
export interface PlanSupplementOptions {
  scope?: string | undefined;
  /** Tokens the rest of the next turn's context takes; absent: the other zones' floors. */
  usage_tokens?: number | undefined;
  /** A commit's `tokens` (seed 003's `finalTokens`): the text is cut to it; above the room, refused. */
  tokens?: number | undefined;
  /** The session's supplements committed and not consumed yet: the next turn shows them too, in the same zone. */
  pending?: readonly RecordedSupplement[] | undefined;
}

const NOTE = " […truncated]";

/** The room the `supplemental` zone has for one text, and what bounds it. */
function roomFor(
  policy: ArenaPolicy,
  tokenizer: Tokenizer,
  usageTokens: number | undefined,
  pending: readonly RecordedSupplement[],
) {
  const { budget } = policy;
  const limits = zoneLimits(budget.total_tokens);
  // The zone's heading and the line around the text (`- …\n`), as the planner counts them.
  const overhead = tokenizer.count(`## ${ZONE_TITLES.supplemental}\n`) + 1 + tokenizer.count("- \n");
  // The supplements pending take their lines of the zone first.
  const pendingTokens = pending.reduce((sum, supplement) => sum + tokenizer.count(`- ${supplement.text}\n`), 0);
  const pendingNote = pending.length > 0 ? `, less ${pendingTokens} of ${pending.length} supplement(s) pending` : "";
  const capRoom = Math.max(0, limits.supplemental.cap - overhead - pendingTokens);
  const floors = ZONES.reduce((sum, zone) => sum + (zone === "supplemental" ? 0 : limits[zone].floor), 0);
  const used = Math.max(usageTokens ?? 0, floors);
  const critical = usageTokens !== undefined && pressureOf(usageTokens, budget).level === "critical";
  const at = critical ? `, at critical pressure: ${budget.compact_ratio} of the budget` : "";
  const ceiling = critical ? Math.floor(budget.compact_ratio * budget.total_tokens) : budget.total_tokens;
  const budgetRoom = Math.max(0, ceiling - used - overhead - pendingTokens);
  const why =
    budgetRoom < capRoom
      ? `the budget leaves ${budgetRoom} tokens after the rest of the context (${used} tokens of ${ceiling}${at}${pendingNote})`
      : `the supplemental zone has room for ${capRoom} tokens (its cap, ${ZONE_SHARES.supplemental.cap} of the ${budget.total_tokens}-token budget${pendingNote})`;
  return { room: Math.min(budgetRoom, capRoom), why, pendingTokens };
}

/** `text` cut to at most `maxTokens` tokens, note included (`[…truncated]`). */
function cut(text: string, maxTokens: number, tokenizer: Tokenizer): string {
  let room = maxTokens - tokenizer.count(NOTE);
  let cutText = `${tokenizer.truncate(text, room).trimEnd()}${NOTE}`;
  // Joining may count a token more than its parts: shorten until it fits.
  while (room > 0 && tokenizer.count(cutText) > maxTokens) {
    room -= 1;
    cutText = `${tokenizer.truncate(text, room).trimEnd()}${NOTE}`;
  }
  return cutText;
}

/**
 * How much of `text` the next turn's `supplemental` zone takes, under `policy` (the runner's arena).
 * With `options.tokens` (a commit's), the text is cut to it, and a number above the room is refused
 * with an InvalidRequestError.
 */
export function planSupplement(text: string, policy: ArenaPolicy, options: PlanSupplementOptions = {}): SupplementPlan {
  const tokenizer = tokenizerFor(policy.model);
  const { room, why, pendingTokens } = roomFor(policy, tokenizer, options.usage_tokens, options.pending ?? []);
  if (options.tokens !== undefined && options.tokens > room)
    throw new InvalidRequestError(
      `the commit asks for ${options.tokens} tokens; ${why}: plan it first and commit at most ${room}`,
    );
  const limit = options.tokens ?? room;
  const asked = tokenizer.count(text);
  const base = {
    scope: options.scope ?? null,
    tokens_asked: asked,
    room_tokens: room,
    pending_tokens: pendingTokens,
    encoding: tokenizer.encoding,
    encoding_exact: tokenizer.exact,
  };
  if (asked <= limit) return { ...base, tokens_accepted: asked, outcome: "accepted", text };
  const reason =
    options.tokens !== undefined && options.tokens < room ? `the commit allows ${options.tokens} tokens` : why;
  // Too little room to say anything with the note: dropped.
  if (limit <= tokenizer.count(NOTE))
    return { ...base, tokens_accepted: 0, outcome: "dropped", reason: `no room: ${reason}`, text: "" };
  const accepted = cut(text, limit, tokenizer);
  return {
    ...base,
    tokens_accepted: tokenizer.count(accepted),
    outcome: "truncated",
    reason: `${asked} tokens asked; ${reason}`,
    text: accepted,
  };
}

/** What a commit records of a plan (its SUPPLEMENT_COMMITTED); null when the plan dropped the text. */
export function committedOf(plan: SupplementPlan): SupplementCommitted | null {
  if (plan.outcome === "dropped") return null;
  return {
    ...(plan.scope !== null ? { scope: plan.scope } : {}),
    text: plan.text,
    tokens: plan.tokens_accepted,
    tokens_asked: plan.tokens_asked,
    truncated: plan.outcome === "truncated",
  };
}

/** The supplements a turn consumes: those recorded after the last its session's arena consumed, oldest first. */
export function pendingSupplements(
  state: ContextArenaState | undefined,
  recorded: readonly RecordedSupplement[] | undefined,
): RecordedSupplement[] {
  const consumed = state?.supplement_seq ?? 0;
  return (recorded ?? []).filter((supplement) => supplement.seq > consumed).sort((a, b) => a.seq - b.seq);
}

/** The context with the pending supplements for the planner (the `supplemental` zone's items). */
export function withSupplements(context: AgentContext, pending: readonly RecordedSupplement[]): AgentContext {
  if (pending.length === 0) return context;
  return {
    ...context,
    supplemental: pending.map(({ seq, scope, text }) => ({ seq, ...(scope !== undefined ? { scope } : {}), text })),
  };
}

/** What CONTEXT_PLANNED cites of each consumed supplement: the tokens committed, and what the plan kept. */
export function supplementCitations(
  pending: readonly RecordedSupplement[],
  plan: ContextPlan,
  tokenizer: Tokenizer,
): SupplementCitation[] {
  return pending.map((supplement) => {
    const id = `supplement:${supplement.seq}`;
    const kept = plan.kept[id];
    return {
      seq: supplement.seq,
      ...(supplement.scope !== undefined ? { scope: supplement.scope } : {}),
      tokens_committed: supplement.tokens,
      tokens_accepted: kept === undefined ? 0 : tokenizer.count(kept),
      outcome: kept === undefined ? "dropped" : plan.report.truncated.includes(id) ? "truncated" : "kept",
    };
  });
}

/** The supplements the agents are given: those the plan kept, as it kept them. */
export function plannedSupplements(context: AgentContext, plan: ContextPlan): AgentContext["supplemental"] {
  return context.supplemental?.flatMap((supplement) => {
    const kept = plan.kept[`supplement:${supplement.seq}`];
    return kept === undefined ? [] : [{ ...supplement, text: kept }];
  });
}
