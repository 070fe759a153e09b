import type { Claim } from "../contracts/workspace.ts";

/** Deliberation stops early once consensus reaches this level. */
export const CONSENSUS_THRESHOLD = 0.9;
export const MAX_DELIBERATION_ROUNDS = 3;

/**
 * Claim-based consensus in [0, 1]: the confidence-weighted share of stances
 * on claims that are support rather than opposition. No contested claim
 * means nothing to disagree about, which counts as full consensus.
 */
export function computeConsensus(claims: readonly Claim[]): number {
  let agreeing = 0;
  let total = 0;
  for (const claim of claims) {
    agreeing += claim.confidence * claim.support.length;
    total += claim.confidence * (claim.support.length + claim.opposition.length);
  }
  return total === 0 ? 1 : Math.round((agreeing / total) * 1000) / 1000;
}

/**
 * One deliberation round without a model: claims that more agents oppose than
 * support are withdrawn, and contested ones lose confidence in proportion to
 * their opposition. Agents revising their own claims between rounds (LLM mode)
 * goes through the same workspace.
 */
export function reviseClaims(claims: readonly Claim[]): Claim[] {
  return claims
    .filter((claim) => claim.opposition.length <= claim.support.length)
    .map((claim) => {
      if (claim.opposition.length === 0) return claim;
      const share = claim.opposition.length / (claim.support.length + claim.opposition.length);
      return { ...claim, confidence: Math.round(claim.confidence * (1 - share) * 1000) / 1000 };
    });
}
