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

/** Claims someone opposes. */
export const contestedClaims = (claims: readonly Claim[]): Claim[] =>
  claims.filter((claim) => claim.opposition.length > 0);

/**
 * Who is asked to reconsider in a deliberation round: the authors of
 * contested claims and the agents opposing them, each once, in a stable order.
 */
export function stakeholders(claims: readonly Claim[]): string[] {
  const agents = new Set<string>();
  for (const claim of contestedClaims(claims)) {
    agents.add(claim.source);
    for (const agent of claim.opposition) agents.add(agent);
  }
  return [...agents].sort();
}
