/**
 * The zones of an agent's context, in their fixed order, and the items each
 * holds, taken from what the turn gives an agent (AgentContext).
 *
 *   identity_persona  standing instructions (procedures), the persona memory evolved, the council's stance
 *   truth             the truth ledger's active facts
 *   task_state        the user's message, the task ledger, the turn's signals and claims
 *   tool_failures     tool calls that failed earlier in the turn
 *   supplemental      text an application committed for this turn (supplemental injection)
 *   working_memory    the compaction summary, recent turns, threads left open
 *   recall            what memory recalls of the user for this message, and the turns it recalled
 *                     that the compaction summary covers (so the summary's cut-off hides none of them)
 *   rag_external      chunks of the knowledge collections the agent or its node names, with citations
 *
 * Within a zone each item has a rank: 0 is kept longest, higher ranks are
 * dropped first. Its `order` is where it is shown in the zone.
 */
import type { AgentContext } from "../contracts/agent.ts";
import { ContextZone } from "../contracts/context.ts";
import { citationOf } from "../contracts/knowledge.ts";

/** The zones, in the order they are planned and shown (the contract's: one list, so a new zone is added once). */
export const ZONES = ContextZone.options;
export type Zone = ContextZone;

/** A zone's floor (tokens kept for it while other zones degrade) and cap (most tokens it may take). */
export interface ZoneLimit {
  floor: number;
  cap: number;
}

/** Floors and caps as shares of the session's budget (docs/context.md lists them). */
export const ZONE_SHARES: Readonly<Record<Zone, ZoneLimit>> = {
  identity_persona: { floor: 0.02, cap: 0.08 },
  truth: { floor: 0.02, cap: 0.1 },
  task_state: { floor: 0.05, cap: 0.25 },
  tool_failures: { floor: 0, cap: 0.05 },
  supplemental: { floor: 0, cap: 0.1 },
  working_memory: { floor: 0.05, cap: 0.35 },
  recall: { floor: 0, cap: 0.2 },
  rag_external: { floor: 0, cap: 0.15 },
};

/** The zones' floors and caps in tokens, for a budget of `totalTokens` (`shares`: adapted ones, adaptiveZones.ts). */
export function zoneLimits(
  totalTokens: number,
  shares: Readonly<Record<Zone, ZoneLimit>> = ZONE_SHARES,
): Record<Zone, ZoneLimit> {
  const limits = {} as Record<Zone, ZoneLimit>;
  for (const zone of ZONES) {
    const share = shares[zone];
    limits[zone] = { floor: Math.floor(share.floor * totalTokens), cap: Math.floor(share.cap * totalTokens) };
  }
  return limits;
}

/** The heading a zone's section has in the prompt. */
export const ZONE_TITLES: Readonly<Record<Zone, string>> = {
  identity_persona: "Identity and persona",
  truth: "Truth (facts the session holds true)",
  task_state: "Task state",
  tool_failures: "Tool failures",
  supplemental: "Supplemental (added for this turn by the application)",
  working_memory: "Working memory",
  recall: "Recall (what memory knows of the user)",
  rag_external: "Knowledge (passages from the user's documents; cite them as [collection/document@offset])",
};

/** One piece of context. */
export interface ContextItem {
  zone: Zone;
  /** Stable within a plan: what the report names (`episode:12`, `fact:0`). */
  id: string;
  text: string;
  /** 0 is kept longest; higher ranks are dropped first. */
  rank: number;
  /** Where it is shown within its zone. */
  order: number;
  /** Never dropped (the user's message): truncated instead when nothing else is left to give up. */
  pinned?: boolean;
}

/** A compaction summary of a session's older turns (see compaction.ts). */
export interface ContextSummary {
  /** The last turn the summary covers: episodes up to it leave working memory (one memory recalls is shown in recall). */
  through_turn: number;
  text: string;
}

/** What the planner is given: an agent's context, and what the turn adds to it. */
export interface ContextSources {
  context: AgentContext;
  /** The session's compaction summary, when older turns were compacted. */
  summary?: ContextSummary | null;
  /** Tool calls that failed earlier in the turn, newest first (`<tool>: <message>`). */
  tool_failures?: string[];
}

const round2 = (value: number) => Math.round(value * 100) / 100;

/** The readings of a record above zero, as `name value` pairs, strongest first. */
function readings(values: Record<string, number>): string {
  return Object.entries(values)
    .filter(([, value]) => Math.abs(value) >= 0.05)
    .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]) || a[0].localeCompare(b[0]))
    .map(([name, value]) => `${name} ${round2(value)}`)
    .join(", ");
}

/** Every item of a context, zone by zone (items of a zone in rank order). */
export function contextItems(sources: ContextSources): ContextItem[] {
  const { context } = sources;
  const items: ContextItem[] = [];
  const add = (zone: Zone, id: string, text: string, rank: number, order = rank, pinned = false): void => {
    if (text.trim().length > 0) items.push({ zone, id, text, rank, order, ...(pinned ? { pinned } : {}) });
  };

  // Identity and persona: the agent's identity file (kept longest), standing instructions (most recently
  // taught first), the persona, the council's stance.
  if (context.identity) add("identity_persona", "identity", context.identity, -1);
  for (const [index, procedure] of (context.procedures ?? []).entries())
    add("identity_persona", `procedure:${index}`, procedure, index);
  if (context.persona) add("identity_persona", "persona", context.persona, 50);
  const stance = readings(context.stance);
  if (stance) add("identity_persona", "stance", `The council's stance: ${stance}.`, 100);

  // Truth: active facts, most recently changed first.
  for (const [index, fact] of (context.ledgers?.facts ?? []).entries()) add("truth", `fact:${index}`, fact, index);

  // Task state: the message (pinned), the task ledger, the turn's signals, claims on the table.
  add("task_state", "user_message", `The user says: ${context.user_message}`, 0, 0, true);
  const task = context.ledgers?.task;
  if (task?.goal) add("task_state", "goal", `Goal: ${task.goal}`, 1, 1);
  for (const [index, blocker] of (task?.open_blockers ?? []).entries())
    add("task_state", `blocker:${index}`, `Blocked: ${blocker}`, 2, 2);
  for (const [index, item] of (task?.open_items ?? []).entries())
    add("task_state", `item:${index}`, `Open: ${item}`, 3 + index, 3);
  // Work done outside the turns: results reported and not merged yet, then the last merge.
  const workers = context.ledgers?.workers;
  for (const [index, result] of (workers?.pending ?? []).entries())
    add("task_state", `worker_result:${index}`, `Worker result: ${result}`, 14 + index, 14);
  if (workers && workers.merged.length > 0)
    add("task_state", "worker_merge", `Merged worker results: ${workers.merged.join("; ")}`, 13, 13);
  const signals = readings({ ...context.sensors, ...context.modulators });
  if (signals) add("task_state", "signals", `Signals this turn: ${signals}.`, 20, 20);
  const claims = [...context.claims].sort((a, b) => b.confidence - a.confidence || a.id.localeCompare(b.id));
  for (const [index, claim] of claims.entries()) {
    const support = claim.support.length ? ` [supported by ${claim.support.join(", ")}]` : "";
    const opposition = claim.opposition.length ? ` [opposed by ${claim.opposition.join(", ")}]` : "";
    const text = `Claim ${claim.id} (${claim.source}, ${round2(claim.confidence)}): ${claim.text}${support}${opposition}`;
    add("task_state", `claim:${claim.id}`, text, 30 + index, 30 + index);
  }

  // Tool failures: newest first.
  for (const [index, failure] of (sources.tool_failures ?? []).entries())
    add("tool_failures", `tool_failure:${index}`, failure, index);

  // Supplemental: what the application committed for this turn, in the order it was committed.
  for (const [index, supplement] of (context.supplemental ?? []).entries())
    add("supplemental", `supplement:${supplement.seq}`, supplement.text, index);

  // Working memory: the summary of older turns, recent turns (newest kept longest, shown in order), open threads.
  const summary = sources.summary ?? null;
  if (summary) add("working_memory", "summary", `Earlier turns, in short: ${summary.text}`, 0, 0);
  const episodes = context.episodes
    .filter((episode) => summary === null || episode.turn_id > summary.through_turn)
    .sort((a, b) => a.turn_id - b.turn_id);
  for (const [index, episode] of episodes.entries()) {
    const text = `Turn ${episode.turn_id}. User: ${episode.user_text} | Reply: ${episode.response}`;
    add("working_memory", `episode:${episode.turn_id}`, text, episodes.length - index, 1 + index);
  }
  for (const [index, thread] of (context.open_threads ?? []).entries())
    add("working_memory", `thread:${index}`, `Open thread: ${thread}`, 1_000 + index, 1_000 + index);

  // Recall: facts about the user and the turns memory recalled that the summary covers, each best match first,
  // taken in turn (fact 0, turn 0, fact 1…): the summary's cut-off hides no turn memory recalled for the message.
  for (const [index, fact] of (context.user_facts ?? []).entries()) add("recall", `user_fact:${index}`, fact, index);
  const recalled =
    summary === null ? [] : context.episodes.filter((episode) => episode.turn_id <= summary.through_turn);
  for (const [index, episode] of recalled.entries()) {
    const text = `Recalled turn ${episode.turn_id} (before the summary). User: ${episode.user_text} | Reply: ${episode.response}`;
    add("recall", `episode:${episode.turn_id}`, text, index, index + 0.5);
  }

  // External knowledge: passages of the named collections, best match first, each with its citation.
  for (const [index, passage] of (context.knowledge ?? []).entries()) {
    const heading = passage.heading ? ` (${passage.heading})` : "";
    add("rag_external", `passage:${index}`, `[${citationOf(passage)}]${heading} ${passage.text}`, index);
  }

  return items;
}
