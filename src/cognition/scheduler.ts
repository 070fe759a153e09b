import type { AgentManifest } from "../contracts/agent.ts";
import type { Modulators, Sensors } from "../contracts/workspace.ts";

export interface SchedulerOptions {
  /** Most agents in one scored wave (default 10). */
  maxAgentsPerWave: number;
}
export const defaultSchedulerOptions: SchedulerOptions = { maxAgentsPerWave: 10 };

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

/** Wave 0: every ALWAYS_ON agent. Wave 1: the best-scored others, at most `maxAgentsPerWave`. */
export function planWaves(
  manifests: readonly AgentManifest[],
  sensors: Sensors,
  modulators: Modulators,
  options: SchedulerOptions = defaultSchedulerOptions,
): { waves: string[][]; scores: Record<string, number> } {
  const alwaysOn = manifests.filter((manifest) => manifest.priority === "ALWAYS_ON").map((manifest) => manifest.id);
  const scores: Record<string, number> = {};
  for (const manifest of manifests) {
    if (manifest.priority !== "ALWAYS_ON") scores[manifest.id] = scoreAgent(manifest, sensors, modulators);
  }
  const scheduled = Object.entries(scores)
    .filter(([, score]) => score > 0)
    .sort(([idA, a], [idB, b]) => b - a || idA.localeCompare(idB))
    .slice(0, options.maxAgentsPerWave)
    .map(([id]) => id);
  return { waves: [alwaysOn, scheduled].filter((wave) => wave.length > 0), scores };
}
