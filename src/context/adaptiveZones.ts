/**
 * Adaptive zones (seed 003's `adaptiveZones`): a zone that keeps losing items to its cap gets a
 * larger cap, step by step, and gives it back once its demand fits its usual cap again. Pure, and
 * apart from the planner, which it feeds caps: a turn's plan report in, the session's adaptation
 * out (carried in its arena state, recorded in CONTEXT_PLANNED so a replay has it), with the
 * changes to record (CONTEXT_ZONES_ADAPTED). Raising a cap never makes a context larger than the
 * budget: the planner still fits every zone into the target, degrading from the last zone first.
 */
import type { ZoneAdaptation, ZoneAdaptationChange } from "../contracts/context.ts";
import { ZONE_SHARES, ZONES, type Zone, type ZoneLimit } from "./zones.ts";

/** Consecutive turns a zone must lose items to its cap before its cap grows. */
export const STARVED_TURNS = 3;
/** Consecutive turns a grown zone's demand must fit its usual cap before its cap shrinks back. */
export const RELAXED_TURNS = 3;
/** How much a cap grows or shrinks at a time, as a share of the budget. */
export const CAP_STEP = 0.02;
/** The most a cap may grow to: this many times its usual share. */
export const MAX_CAP_FACTOR = 2;

/** A session's zones before any adaptation. */
export const noAdaptation = (): ZoneAdaptation => ({ caps: {}, starved: {}, relaxed: {} });

/** The zones' shares with the session's adapted caps in place of the usual ones. */
export function adaptedShares(adaptation: ZoneAdaptation | undefined): Record<Zone, ZoneLimit> {
  const shares = { ...ZONE_SHARES } as Record<Zone, ZoneLimit>;
  for (const zone of ZONES) {
    const cap = adaptation?.caps[zone];
    if (cap !== undefined) shares[zone] = { ...shares[zone], cap };
  }
  return shares;
}

/** What a turn's plan says of one zone: whether it lost items to its cap, and what it asked for. */
export interface ZoneOutcome {
  zone: Zone;
  /** Items were dropped for the zone's cap. */
  capped: boolean;
  /** What all its items would take (tokens). */
  demand_tokens: number;
}

const round4 = (share: number) => Math.round(share * 10_000) / 10_000;

/**
 * The session's adaptation after a turn: `outcomes` from the turn's plan, `totalTokens` the budget.
 * Returns the new adaptation and the caps that changed (empty: none).
 */
export function adaptZones(
  previous: ZoneAdaptation | undefined,
  outcomes: readonly ZoneOutcome[],
  totalTokens: number,
): { adaptation: ZoneAdaptation; changes: ZoneAdaptationChange[] } {
  const adaptation: ZoneAdaptation = {
    caps: { ...previous?.caps },
    starved: { ...previous?.starved },
    relaxed: { ...previous?.relaxed },
  };
  const changes: ZoneAdaptationChange[] = [];
  for (const { zone, capped, demand_tokens } of outcomes) {
    const usual = ZONE_SHARES[zone].cap;
    const cap = adaptation.caps[zone] ?? usual;
    if (capped && usual > 0) {
      delete adaptation.relaxed[zone];
      const starved = (adaptation.starved[zone] ?? 0) + 1;
      const grown = round4(Math.min(cap + CAP_STEP, usual * MAX_CAP_FACTOR));
      if (starved >= STARVED_TURNS && grown > cap) {
        adaptation.caps[zone] = grown;
        delete adaptation.starved[zone];
        changes.push({ zone, from_share: cap, to_share: grown, reason: "starved", turns: starved });
      } else adaptation.starved[zone] = starved;
      continue;
    }
    delete adaptation.starved[zone];
    if (cap <= usual) continue;
    // Grown, and no longer losing items: shrink back once its demand fits the usual cap for a while.
    if (demand_tokens > Math.floor(usual * totalTokens)) {
      delete adaptation.relaxed[zone];
      continue;
    }
    const relaxed = (adaptation.relaxed[zone] ?? 0) + 1;
    if (relaxed < RELAXED_TURNS) {
      adaptation.relaxed[zone] = relaxed;
      continue;
    }
    delete adaptation.relaxed[zone];
    const shrunk = round4(Math.max(cap - CAP_STEP, usual));
    if (shrunk <= usual) delete adaptation.caps[zone];
    else adaptation.caps[zone] = shrunk;
    changes.push({ zone, from_share: cap, to_share: shrunk, reason: "relaxed", turns: relaxed });
  }
  return { adaptation, changes };
}

/** True when the adaptation holds nothing (no cap moved, no streak under way): not worth recording. */
export const isNoAdaptation = (adaptation: ZoneAdaptation): boolean =>
  Object.keys(adaptation.caps).length +
    Object.keys(adaptation.starved).length +
    Object.keys(adaptation.relaxed).length ===
  0;
