import type { Contribution } from "../contracts/agent.ts";
import type { Claim, Modulators, Sensors, Stance, StanceDelta } from "../contracts/workspace.ts";

/**
 * The turn's shared workspace (blackboard): claims with support and opposition,
 * the stance, the global modulators, and what agents proposed to the council.
 * Every function here is pure: it returns a new workspace.
 */
export interface Workspace {
  claims: Claim[];
  stance: Stance;
  modulators: Modulators;
  proposals: { source: string; kind: "say" | "do_not" | "ask"; text: string }[];
}

const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));

/** Modulators follow from the sensors, smoothed with the previous turn's values. */
export function modulatorsFromSensors(sensors: Sensors, previous: Modulators): Modulators {
  const blend = (old: number, now: number) => clamp(0.5 * old + 0.5 * now, 0, 1);
  return {
    arousal: blend(previous.arousal, Math.max(sensors.vulnerability, sensors.safety_risk, sensors.rupture)),
    time_pressure: blend(previous.time_pressure, sensors.advice_requested * 0.6),
    social_risk: blend(
      previous.social_risk,
      Math.max(sensors.relational_bid, sensors.rupture, sensors.prompt_injection) * 0.8,
    ),
    uncertainty: blend(previous.uncertainty, sensors.ambiguity),
  };
}

export function applyStanceDelta(stance: Stance, delta: StanceDelta): Stance {
  return {
    valence: clamp(stance.valence + (delta.valence ?? 0), -1, 1),
    warmth: clamp(stance.warmth + (delta.warmth ?? 0), -1, 1),
    caution: clamp(stance.caution + (delta.caution ?? 0), -1, 1),
    curiosity: clamp(stance.curiosity + (delta.curiosity ?? 0), -1, 1),
  };
}

/**
 * Merges one agent's output: withdrawn claims leave (only their author may
 * withdraw them), conceded claims lose the agent's opposition, new claims
 * arrive supported by their author, then support, opposition, proposals and
 * the stance delta.
 */
export function applyAgentOutput(workspace: Workspace, agentId: string, output: Contribution): Workspace {
  const kept = workspace.claims
    .filter((claim) => !(claim.source === agentId && output.withdraws.includes(claim.id)))
    .map((claim) =>
      output.concedes.includes(claim.id)
        ? { ...claim, opposition: claim.opposition.filter((id) => id !== agentId) }
        : claim,
    );
  const claims = kept.map((claim) => ({
    ...claim,
    support:
      output.supports.includes(claim.id) && !claim.support.includes(agentId)
        ? [...claim.support, agentId]
        : claim.support,
    opposition:
      output.opposes.includes(claim.id) && !claim.opposition.includes(agentId)
        ? [...claim.opposition, agentId]
        : claim.opposition,
  }));
  for (const proposed of output.claims) {
    const existing = claims.find((claim) => claim.id === proposed.id);
    if (existing) {
      if (!existing.support.includes(agentId)) existing.support = [...existing.support, agentId];
      existing.confidence = Math.max(existing.confidence, proposed.confidence);
    } else {
      claims.push({ ...proposed, source: agentId, support: [agentId], opposition: [] });
    }
  }
  return {
    ...workspace,
    claims,
    stance: applyStanceDelta(workspace.stance, output.stance_delta),
    proposals: [...workspace.proposals, ...output.proposals.map((proposal) => ({ source: agentId, ...proposal }))],
  };
}

/** The sum of several deltas, for one STANCE_UPDATED event per wave. */
export function stanceDifference(before: Stance, after: Stance): StanceDelta {
  const delta: StanceDelta = {};
  for (const key of Object.keys(before) as (keyof Stance)[]) {
    const change = Math.round((after[key] - before[key]) * 1000) / 1000;
    if (change !== 0) delta[key] = change;
  }
  return delta;
}
