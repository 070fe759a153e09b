import { z } from "zod";

/**
 * Supplemental injection (seed 003's `planSupplementalInjection` and `commitSupplementalInjection`;
 * docs/context.md, "Supplemental injection"): text an application adds to a session's next turn.
 * A plan says, writing nothing, how much of a text the `supplemental` zone would accept; a commit
 * records it on the session's log (SUPPLEMENT_COMMITTED, with the ledgers' events), and the next
 * turn puts it in its agents' context once, its CONTEXT_PLANNED citing it.
 */

/** The longest text a plan or a commit takes, in characters. */
export const SUPPLEMENT_TEXT_MAX_CHARS = 16_000;
/** How many committed supplements the ledgers' projection keeps (the newest): a turn takes those not consumed. */
export const SUPPLEMENTS_KEPT = 16;
/** How many scope ids the ledgers' projection remembers (the newest), so a commit is idempotent per scope. */
export const SUPPLEMENT_SCOPES_KEPT = 256;

/** An injection scope: a commit naming one already recorded records nothing again. */
export const SupplementScope = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,128}$/, "a scope is 1-128 characters of A-Z, a-z, 0-9, '_', '.', ':' or '-'");

const SupplementText = z
  .string()
  .refine((text) => text.trim().length > 0, { error: "the text is empty" })
  .refine((text) => text.length <= SUPPLEMENT_TEXT_MAX_CHARS, {
    error: `the text is over ${SUPPLEMENT_TEXT_MAX_CHARS} characters`,
  });

/** What a plan is asked: the text, and what the rest of the context takes when the caller knows it. */
export const SupplementPlanInput = z.object({
  text: SupplementText,
  scope: SupplementScope.optional(),
  /** Tokens the rest of the next turn's context takes (seed 003's `usage`); absent: the other zones' floors. */
  usage_tokens: z.number().int().min(0).optional(),
});
export type SupplementPlanInput = z.infer<typeof SupplementPlanInput>;

/** What a commit is given: the text, the tokens it may use (seed 003's `finalTokens`), its scope. */
export const SupplementCommitInput = z.object({
  text: SupplementText,
  /** The most tokens the injection may take: the text is cut to it; more than the zone's room is refused. */
  tokens: z.number().int().min(1).optional(),
  scope: SupplementScope.optional(),
});
export type SupplementCommitInput = z.infer<typeof SupplementCommitInput>;

const Tokens = z.number().int().min(0);

/** What a plan answers (and a commit records): how much of the text the zone takes, and why not all. */
export const SupplementPlan = z.object({
  scope: SupplementScope.nullable(),
  /** The text's tokens, counted as the runner counts the context. */
  tokens_asked: Tokens,
  /** What the zone takes of it (0: dropped). */
  tokens_accepted: Tokens,
  /** The room the zone has for a text: its cap, less what the budget's other uses leave it. */
  room_tokens: Tokens,
  /** What the supplements committed and not consumed yet take of the zone (the room is what they leave). */
  pending_tokens: Tokens.optional(),
  /** `accepted` whole, `truncated` to the room (or the commit's tokens), `dropped` for want of room. */
  outcome: z.enum(["accepted", "truncated", "dropped"]),
  /** Why it was truncated or dropped, one line; absent when accepted. */
  reason: z.string().max(500).optional(),
  /** The text as the zone would hold it (cut, with a note, when truncated; empty when dropped). */
  text: z.string().max(SUPPLEMENT_TEXT_MAX_CHARS + 100),
  /** The tokenizer's encoding, and whether it is the runner's model's own. */
  encoding: z.string(),
  encoding_exact: z.boolean(),
});
export type SupplementPlan = z.infer<typeof SupplementPlan>;

/** SUPPLEMENT_COMMITTED: a supplement recorded for the session's next turn. */
export const SupplementCommitted = z.object({
  /** Absent: the commit named none (each such commit is a new injection). */
  scope: SupplementScope.optional(),
  text: z
    .string()
    .min(1)
    .max(SUPPLEMENT_TEXT_MAX_CHARS + 100),
  /** The tokens it accounts for (what the zone accepted of the text). */
  tokens: z.number().int().min(1),
  tokens_asked: Tokens,
  truncated: z.boolean(),
});
export type SupplementCommitted = z.infer<typeof SupplementCommitted>;

/** A recorded supplement, as the ledgers fold it: with the stream sequence of its event. */
export const RecordedSupplement = SupplementCommitted.extend({
  /** The stream sequence of its SUPPLEMENT_COMMITTED: a turn that planned it consumed it (`supplement_seq`). */
  seq: z.number().int().min(1),
  by: z.string().min(1).max(128),
  at: z.string().max(40),
});
export type RecordedSupplement = z.infer<typeof RecordedSupplement>;

/** The ledgers' supplements: the newest recorded (consumed or not: the session's arena says), the scopes seen. */
export const SupplementsState = z.object({
  recorded: z.array(RecordedSupplement).max(SUPPLEMENTS_KEPT),
  scopes: z.array(SupplementScope).max(SUPPLEMENT_SCOPES_KEPT),
});
export type SupplementsState = z.infer<typeof SupplementsState>;

/** What a commit answers: what was recorded, or (`duplicate`) what its scope recorded before. */
export const SupplementCommitResult = SupplementCommitted.extend({
  /** The scope was committed before: nothing was recorded again (the earlier text and tokens are answered). */
  duplicate: z.boolean(),
});
export type SupplementCommitResult = z.infer<typeof SupplementCommitResult>;

/** The ledger event payloads of supplements (spread into LedgerEventPayloads). */
export const SupplementEventPayloads = {
  /** A supplement committed for the session's next turn (`client.commitSupplemental`, `conclave context supplement commit`). */
  SUPPLEMENT_COMMITTED: SupplementCommitted,
} as const;

/** A supplement a turn cites in CONTEXT_PLANNED: its event, scope, tokens committed and what the plan kept. */
export const SupplementCitation = z.object({
  seq: z.number().int().min(1),
  scope: SupplementScope.optional(),
  tokens_committed: Tokens,
  tokens_accepted: Tokens,
  outcome: z.enum(["kept", "truncated", "dropped"]),
});
export type SupplementCitation = z.infer<typeof SupplementCitation>;
