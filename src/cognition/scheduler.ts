import type { AgentManifest } from "../contracts/agent.ts";
import type { PlanWavesReply } from "../contracts/scheduler.ts";
import type { Modulators, Sensors } from "../contracts/workspace.ts";

export interface SchedulerOptions {
  /** Most agents in one scored wave (default 10). */
  maxAgentsPerWave: number;
}
export const defaultSchedulerOptions: SchedulerOptions = { maxAgentsPerWave: 10 };

/** When each agent may fire again in a session: agent id → epoch milliseconds. */
export type Cooldowns = Record<string, number>;

/**
 * An agent's score this turn: its agency's sensor, its manifest triggers,
 * the modulators, and a base score for MONITOR agents. Zero means "do not run".
 */
export function scoreAgent(manifest: AgentManifest, sensors: Sensors, modulators: Modulators): number {
  let score = 0;
  const agency = manifest.agency;
  if (agency === "emotion" && sensors.vulnerability > 0.3) score += sensors.vulnerability;
  if (agency === "reasoning" && sensors.advice_requested > 0.3) score += sensors.advice_requested;
  if (agency === "social" && sensors.relational_bid > 0.3) score += sensors.relational_bid;
  for (const trigger of manifest.triggers) {
    const value = sensors[trigger as keyof Sensors] ?? 0;
    if (value > 0.3) score += value / 2;
  }
  if ((agency === "emotion" || agency === "monitoring") && modulators.arousal > 0.6) score += 0.3;
  if (agency === "planning" && modulators.time_pressure > 0.5) score += 0.3;
  if ((agency === "social" || agency === "inhibition") && modulators.social_risk > 0.5) score += 0.3;
  if (manifest.priority === "MONITOR") score += 0.2;
  return Math.round(score * 1000) / 1000;
}

export interface PlanInput {
  sensors: Sensors;
  modulators: Modulators;
  /** Tokens the turn's agents may use in all; each agent counts its manifest budget. */
  tokenBudget: number;
  cooldowns: Cooldowns;
  now: number;
}

/**
 * Wave 0: every ALWAYS_ON agent. Wave 1: the best-scored others that are not
 * cooling down, at most `maxAgentsPerWave`, while the token budget lasts.
 * Returns the plan and the cooldowns after marking the scored agents fired.
 */
export function planWaves(
  manifests: readonly AgentManifest[],
  input: PlanInput,
  options: SchedulerOptions = defaultSchedulerOptions,
): PlanWavesReply & { cooldowns: Cooldowns } {
  const skipped: PlanWavesReply["skipped"] = [];
  const alwaysOn = manifests.filter((manifest) => manifest.priority === "ALWAYS_ON");
  let planned = alwaysOn.reduce((sum, manifest) => sum + manifest.token_budget, 0);
  const scores: Record<string, number> = {};
  for (const manifest of manifests) {
    if (manifest.priority !== "ALWAYS_ON") scores[manifest.id] = scoreAgent(manifest, input.sensors, input.modulators);
  }
  const byId = new Map(manifests.map((manifest) => [manifest.id, manifest]));
  const candidates = Object.entries(scores)
    .filter(([, score]) => score > 0)
    .sort(([idA, a], [idB, b]) => b - a || idA.localeCompare(idB));
  const scheduled: string[] = [];
  const cooldowns: Cooldowns = {};
  for (const [id, until] of Object.entries(input.cooldowns)) if (until > input.now) cooldowns[id] = until;
  for (const [id] of candidates) {
    const manifest = byId.get(id)!;
    if ((cooldowns[id] ?? 0) > input.now) {
      skipped.push({ agent_id: id, reason: "cooldown" });
      continue;
    }
    if (scheduled.length >= options.maxAgentsPerWave) {
      skipped.push({ agent_id: id, reason: "wave_full" });
      continue;
    }
    if (planned + manifest.token_budget > input.tokenBudget) {
      skipped.push({ agent_id: id, reason: "budget" });
      continue;
    }
    planned += manifest.token_budget;
    scheduled.push(id);
    if (manifest.cooldown_s > 0) cooldowns[id] = input.now + manifest.cooldown_s * 1000; // mark_fired
  }
  return {
    waves: [alwaysOn.map((manifest) => manifest.id), scheduled].filter((wave) => wave.length > 0),
    scores,
    skipped,
    budget: { limit: input.tokenBudget, planned },
    cooldowns,
  };
}
