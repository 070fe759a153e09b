import type { AgentDefinition } from "../src/agents/defineAgent.ts";
import emotionStress from "./emotion.stress.ts";
import emotionWellbeing from "./emotion.wellbeing.ts";
import inhibitionCensor from "./inhibition.censor.ts";
import inhibitionOverclaim from "./inhibition.overclaim.ts";
import monitoringAnomalyDetector from "./monitoring.anomaly_detector.ts";
import monitoringTriggerWatcher from "./monitoring.trigger_watcher.ts";
import planningNextStep from "./planning.next_step.ts";
import planningTimeKeeper from "./planning.time_keeper.ts";
import reasoningAnalyst from "./reasoning.analyst.ts";
import reasoningClarifier from "./reasoning.clarifier.ts";
import reasoningSkeptic from "./reasoning.skeptic.ts";
import socialBoundaries from "./social.boundaries.ts";
import socialRapport from "./social.rapport.ts";
import socialRepair from "./social.repair.ts";

/**
 * The built-in agents, by id, grouped by agency. Not a
 * closed roster: a worker hosts any agent made with `defineAgent`, and runners
 * and the scheduler learn the live roster from the workers' announcements.
 */
export const AGENTS: ReadonlyMap<string, AgentDefinition> = new Map(
  [
    emotionStress,
    emotionWellbeing,
    reasoningAnalyst,
    reasoningSkeptic,
    reasoningClarifier,
    socialRapport,
    socialRepair,
    socialBoundaries,
    planningNextStep,
    planningTimeKeeper,
    inhibitionCensor,
    inhibitionOverclaim,
    monitoringTriggerWatcher,
    monitoringAnomalyDetector,
  ].map((agent) => [agent.manifest.id, agent] as const),
);
