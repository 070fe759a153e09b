/**
 * The `rag_external` zone's gating (docs/knowledge.md): which chunks of the knowledge collections
 * an agent (or its recipe node) names reach its context. Seed 003 injects external knowledge only
 * when it is enabled, asked for, relevant, available and affordable; here:
 *
 * 1. named: the agent's `knowledge` or its node's (no collection named, nothing is searched);
 * 2. affordable before asking: at `critical` context pressure nothing is searched (the zone, last
 *    in the order, would be the first dropped);
 * 3. available: the knowledge workers answered in time (the caller's part);
 * 4. relevant: a hit scores at least {@link MIN_PASSAGE_SCORE};
 * 5. within the zone's budget: the planner keeps the passages, best first, that fit the zone's cap
 *    and what the other zones leave.
 *
 * Pure CPU: the caller searches, these decide.
 */
import type { AgentContext } from "../contracts/agent.ts";
import type { ArenaPolicy } from "../contracts/context.ts";
import type { KnowledgeHit, KnowledgePassage } from "../contracts/knowledge.ts";
import { type ContextPlan, planContext } from "./planner.ts";
import { tokenizerFor } from "./tokenizer.ts";

/** A hit scoring below this cosine similarity is not relevant enough to be shown. */
export const MIN_PASSAGE_SCORE = 0.05;

/** The most hits asked of the knowledge workers for one agent call. */
export const PASSAGES_ASKED = 8;

function plan(context: AgentContext, policy: ArenaPolicy): ContextPlan {
  return planContext(
    {
      context,
      summary: context.summary ?? null,
      ...(context.tool_failures ? { tool_failures: context.tool_failures } : {}),
    },
    { budget: policy.budget, tokenizer: tokenizerFor(policy.model) },
  );
}

/** Gate 2: whether the context has room to be worth a search (false at `critical` pressure). */
export function ragExternalPermitted(context: AgentContext, policy: ArenaPolicy): boolean {
  return plan(context, policy).report.pressure.level !== "critical";
}

/** What the gating kept of a search's hits, and how many it left out (irrelevant, or past the budget). */
export interface GatedPassages {
  passages: KnowledgePassage[];
  irrelevant: number;
  overBudget: number;
}

/** Gates 4 and 5: the relevant hits, best first, that the `rag_external` zone keeps within the budget. */
export function gatePassages(
  context: AgentContext,
  hits: readonly KnowledgeHit[],
  policy: ArenaPolicy,
  minScore = MIN_PASSAGE_SCORE,
): GatedPassages {
  const relevant = [...hits]
    .filter((hit) => hit.score >= minScore)
    .sort((a, b) => b.score - a.score)
    .map(({ doc_id: _docId, ...passage }) => passage);
  const planned = plan({ ...context, knowledge: relevant }, policy);
  const kept = new Set(planned.report.zones.rag_external.kept);
  const passages = relevant.filter((_, index) => kept.has(`passage:${index}`));
  return {
    passages,
    irrelevant: hits.length - relevant.length,
    overBudget: relevant.length - passages.length,
  };
}
