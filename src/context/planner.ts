/**
 * The context planner: fits an agent's context into what is left of the
 * session's budget, zone by zone in the fixed order (zones.ts), and says what
 * it kept and what it dropped.
 *
 * 1. Caps. Each zone keeps its items in rank order while they fit under its
 *    cap; an item alone larger than the cap is truncated to it, with a note.
 * 2. Target. Pressure is what the context would take with the conversation
 *    (working memory) in full and the other zones as capped, plus the
 *    reserve, or the model's own count of the last prompt when larger, over
 *    the budget: a long conversation presses until compaction folds it in,
 *    while recall or truth at their caps (which compaction cannot shrink) do not.
 *    The zones must fit in the budget less the reserve (the system prompt);
 *    at critical pressure in the compact ratio of it instead, so the next
 *    turns have room until compaction brings the pressure down.
 * 3. Degradation, while the zones take more than the target, always in this order:
 *    a. from the last zone (recall) to the first (identity_persona), each zone
 *       gives up its highest-ranked (least important) items while it stays at
 *       or above its floor;
 *    b. floors relaxed: the same walk, down to nothing but pinned items;
 *    c. the pinned items (the user's message) are truncated to what is left.
 *
 * The plan is pure and deterministic: the same sources, budget and usage give
 * the same text and report.
 */
import type { ContextBudget, RecallMode } from "../contracts/context.ts";
import { type PressureStatus, pressureOf } from "./budget.ts";
import type { Tokenizer } from "./tokenizer.ts";
import {
  type ContextItem,
  type ContextSources,
  contextItems,
  ZONE_TITLES,
  ZONES,
  type Zone,
  type ZoneLimit,
  zoneLimits,
} from "./zones.ts";

/** What a plan is fitted to. */
export interface PlanOptions {
  budget: ContextBudget;
  tokenizer: Tokenizer;
  /** The model's own count of the session's last prompt (`prompt_tokens` of a reply), when known. */
  observed_tokens?: number;
  /** Tokens the prompt spends outside the zones (the system prompt): the zones get the rest. */
  reserve_tokens?: number;
  /** `fallback`: the recall zone is skipped at compact or critical pressure. Default `primary`: always planned. */
  recall_mode?: RecallMode;
  /** The zones' shares of the budget, adapted to the session (adaptiveZones.ts). Default: ZONE_SHARES. */
  zone_shares?: Readonly<Record<Zone, ZoneLimit>>;
  /**
   * The most items a planned context keeps (the arena's entry limit): past it, the least important go
   * first, from the last zone to the first, as in degradation. Pinned items (the message) always stay.
   */
  max_entries?: number;
}

/** Why an item is not in the plan. */
export type DropReason = "zone_cap" | "budget" | "budget_below_floor";

export interface DroppedItem {
  zone: Zone;
  id: string;
  tokens: number;
  reason: DropReason;
}

/** One zone in a plan's report. */
export interface ZoneReport {
  floor: number;
  cap: number;
  /** What all its items would take, uncapped. */
  demand_tokens: number;
  /** What its kept items take, heading included (0: the zone is not shown). */
  tokens: number;
  kept: string[];
  dropped: string[];
}

/** What a plan kept and dropped, and why: the CONTEXT_PLANNED event's payload. */
export interface ContextPlanReport {
  pressure: PressureStatus;
  /** The tokens the zones were fitted into. */
  target_tokens: number;
  /** The tokens of the planned text. */
  planned_tokens: number;
  zones: Record<Zone, ZoneReport>;
  dropped: DroppedItem[];
  /** Items cut short (the id of each). */
  truncated: string[];
  /** Degradation went below some zone's floor (step b or c). */
  floors_relaxed: boolean;
  /** The recall zone was skipped (recall mode `fallback` under pressure): why, and how many items it held. */
  recall_skipped?: { mode: "fallback"; pressure: "compact" | "critical"; items: number };
  /** The arena's entry limit left items out (also in their zones' `dropped`): the limit, and those items. */
  entries_limited?: { max_entries: number; dropped: string[] };
}

export interface ContextPlan {
  /** The prompt text: one section per zone that kept something, in zone order. */
  text: string;
  report: ContextPlanReport;
  /** Each kept item's text by its id, as planned (cut short, with a note, where it was truncated). */
  kept: Readonly<Record<string, string>>;
}

const TRUNCATION_NOTE = " […truncated]";

interface Sized extends ContextItem {
  tokens: number;
}

/** Plans one agent's context. */
export function planContext(sources: ContextSources, options: PlanOptions): ContextPlan {
  const { budget, tokenizer } = options;
  const reserve = options.reserve_tokens ?? 0;
  const limits = zoneLimits(budget.total_tokens, options.zone_shares);
  const lineOf = (text: string) => `- ${text}\n`;
  const size = (item: ContextItem): Sized => ({ ...item, tokens: tokenizer.count(lineOf(item.text)) });
  const heading = Object.fromEntries(
    ZONES.map((zone) => [zone, tokenizer.count(`## ${ZONE_TITLES[zone]}\n`) + 1]),
  ) as Record<Zone, number>;
  const truncated: string[] = [];
  const cut = (item: Sized, maxTokens: number): Sized => {
    const room = Math.max(0, maxTokens - tokenizer.count(lineOf(TRUNCATION_NOTE)));
    truncated.push(item.id);
    return size({ ...item, text: `${tokenizer.truncate(item.text, room)}${TRUNCATION_NOTE}` });
  };

  const all = contextItems(sources).map(size);
  const byZone = (zone: Zone) =>
    all.filter((item) => item.zone === zone).sort((a, b) => a.rank - b.rank || a.order - b.order);
  const demand = Object.fromEntries(
    ZONES.map((zone) => {
      const items = byZone(zone);
      return [zone, items.length ? heading[zone] + items.reduce((sum, item) => sum + item.tokens, 0) : 0];
    }),
  ) as Record<Zone, number>;

  // 1. Caps.
  const kept = new Map<Zone, Sized[]>();
  const dropped: DroppedItem[] = [];
  const skippedRecall: string[] = [];
  for (const zone of ZONES) {
    const room = limits[zone].cap - heading[zone];
    const zoneKept: Sized[] = [];
    let used = 0;
    for (const original of byZone(zone)) {
      const item = original.tokens > room && room > 0 ? cut(original, room) : original;
      if (used + item.tokens <= room) {
        zoneKept.push(item);
        used += item.tokens;
      } else dropped.push({ zone, id: item.id, tokens: original.tokens, reason: "zone_cap" });
    }
    kept.set(zone, zoneKept);
  }
  const zoneTokens = (zone: Zone, items = kept.get(zone)!) =>
    items.length ? heading[zone] + items.reduce((sum, item) => sum + item.tokens, 0) : 0;
  const totalTokens = () => ZONES.reduce((sum, zone) => sum + zoneTokens(zone), 0);

  // 2. Target. Pressure: the conversation in full (what compaction can shrink), the other zones as capped.
  const pressing = ZONES.reduce((sum, zone) => sum + (zone === "working_memory" ? demand[zone] : zoneTokens(zone)), 0);
  const pressure = pressureOf(Math.max(pressing + reserve, options.observed_tokens ?? 0), budget);
  const ceiling =
    pressure.level === "critical" ? Math.floor(budget.compact_ratio * budget.total_tokens) : budget.total_tokens;
  const target = Math.max(0, ceiling - reserve);

  // Recall mode `fallback`: under pressure the recall zone is skipped, whatever room it would have.
  let recallSkipped: ContextPlanReport["recall_skipped"];
  if (options.recall_mode === "fallback" && pressure.level !== "normal") {
    const skipped = byZone("recall");
    recallSkipped = { mode: "fallback", pressure: pressure.level, items: skipped.length };
    kept.set("recall", []);
    for (const item of skipped) skippedRecall.push(item.id);
  }

  // The arena's entry limit: the least important items beyond it go, from the last zone to the first.
  const limited: { zone: Zone; id: string }[] = [];
  if (options.max_entries !== undefined) {
    const count = () => ZONES.reduce((sum, zone) => sum + kept.get(zone)!.length, 0);
    for (const zone of [...ZONES].reverse()) {
      const items = kept.get(zone)!;
      while (count() > options.max_entries) {
        const victim = items.findLast((item) => !item.pinned);
        if (victim === undefined) break;
        items.splice(items.indexOf(victim), 1);
        limited.push({ zone, id: victim.id });
      }
    }
  }

  // 3a and 3b: from the last zone to the first, least important item first.
  let floorsRelaxed = false;
  const degrade = (overFloorsToo: boolean, isOver: () => boolean) => {
    for (const zone of [...ZONES].reverse()) {
      const items = kept.get(zone)!;
      while (isOver()) {
        const victim = items.findLast((item) => !item.pinned);
        if (victim === undefined) break;
        const remaining = items.filter((item) => item !== victim);
        const belowFloor = zoneTokens(zone, remaining) < limits[zone].floor;
        if (belowFloor && !overFloorsToo) break;
        items.splice(items.indexOf(victim), 1);
        if (belowFloor) floorsRelaxed = true;
        dropped.push({
          zone,
          id: victim.id,
          tokens: victim.tokens,
          reason: belowFloor ? "budget_below_floor" : "budget",
        });
      }
    }
  };
  const overTarget = () => totalTokens() > target;
  degrade(false, overTarget);
  degrade(true, overTarget);
  // 3c: the pinned items share what is left.
  if (overTarget()) {
    floorsRelaxed = true;
    for (const zone of ZONES) {
      const items = kept.get(zone)!;
      for (const [index, item] of items.entries()) {
        const excess = totalTokens() - target;
        if (excess > 0) items[index] = cut(item, Math.max(0, item.tokens - excess));
      }
    }
  }

  // Token counts of joined lines may differ by a token or two from the sum of their parts: measured, and trimmed.
  let text = render(kept);
  let planned = tokenizer.count(text);
  while (planned > target && totalTokens() > 0) {
    const before = totalTokens();
    degrade(true, () => totalTokens() === before);
    if (totalTokens() === before) {
      const last = [...ZONES].reverse().find((zone) => kept.get(zone)!.length > 0)!;
      const items = kept.get(last)!;
      const item = items[items.length - 1]!;
      items[items.length - 1] = cut(item, Math.max(0, item.tokens - (planned - target) - 2));
      if (totalTokens() >= before) items.pop();
    }
    text = render(kept);
    planned = tokenizer.count(text);
  }

  const zones = Object.fromEntries(
    ZONES.map((zone) => [
      zone,
      {
        ...limits[zone],
        demand_tokens: demand[zone],
        tokens: zoneTokens(zone),
        kept: kept.get(zone)!.map((item) => item.id),
        dropped: [
          ...dropped.filter((item) => item.zone === zone).map((item) => item.id),
          ...(zone === "recall" ? skippedRecall.filter((id) => !dropped.some((item) => item.id === id)) : []),
          ...limited.filter((item) => item.zone === zone).map((item) => item.id),
        ],
      },
    ]),
  ) as Record<Zone, ZoneReport>;
  return {
    text,
    kept: Object.fromEntries(ZONES.flatMap((zone) => kept.get(zone)!.map((item) => [item.id, item.text]))),
    report: {
      pressure,
      target_tokens: target,
      planned_tokens: planned,
      zones,
      dropped,
      truncated,
      floors_relaxed: floorsRelaxed,
      ...(recallSkipped ? { recall_skipped: recallSkipped } : {}),
      ...(limited.length > 0
        ? { entries_limited: { max_entries: options.max_entries ?? 0, dropped: limited.map((item) => item.id) } }
        : {}),
    },
  };
}

/** The prompt text of the kept items: a section per zone, items in their shown order. */
function render(kept: Map<Zone, ContextItem[]>): string {
  const sections: string[] = [];
  for (const zone of ZONES) {
    const items = [...kept.get(zone)!].sort((a, b) => a.order - b.order || a.rank - b.rank);
    if (items.length > 0) sections.push(`## ${ZONE_TITLES[zone]}\n${items.map((item) => `- ${item.text}\n`).join("")}`);
  }
  return sections.join("\n");
}
