import type { AgentDefinition } from "../src/cognition/agentDefinition.ts";
import emotionStress from "./emotion.stress.ts";
import emotionWellbeing from "./emotion.wellbeing.ts";
import inhibitionCensor from "./inhibition.censor.ts";
import monitoringAnomalyDetector from "./monitoring.anomaly_detector.ts";
import monitoringTriggerWatcher from "./monitoring.trigger_watcher.ts";

/** The roster: every agent a worker can host, by id. */
export const AGENTS: ReadonlyMap<string, AgentDefinition> = new Map(
  [inhibitionCensor, monitoringTriggerWatcher, monitoringAnomalyDetector, emotionStress, emotionWellbeing].map(
    (agent) => [agent.manifest.id, agent] as const,
  ),
);
