import { verdictPassed } from "../../src/cognition/critics.ts";
import { CONSENSUS_THRESHOLD } from "../../src/cognition/deliberation.ts";
import { SAFETY_INTERRUPT_THRESHOLD } from "../../src/cognition/sensors.ts";
import type { TurnContext } from "./context.ts";

type GuardArgs = { context: TurnContext };

/** The turn's named guards: every branch of the chart is one of these. */
export const turnGuards = {
  safetyRisk: ({ context }: GuardArgs) => (context.sensors?.safety_risk ?? 0) > SAFETY_INTERRUPT_THRESHOLD,
  hasWaves: ({ context }: GuardArgs) => context.waves.length > 0,
  /** Cancelled before it started (while queued or in the WAL). */
  cancelledBeforeStart: ({ context }: GuardArgs) => context.cancelled !== undefined,
  hasMoreWaves: ({ context }: GuardArgs) => context.wave + 1 < context.waves.length,
  deliberationSettled: ({ context }: GuardArgs) =>
    context.consensus >= CONSENSUS_THRESHOLD || context.round + 1 >= context.policy.max_deliberation_rounds,
  councilSpeaks: ({ context }: GuardArgs) => context.decision?.speak === true,
  /** Some critic judged, and every one that did passed: a verdict without results is no pass. */
  criticsPassed: ({ context }: GuardArgs) => verdictPassed(context.critics),
  requestBlocked: ({ context }: GuardArgs) => context.blocked,
  /**
   * The voice renders again only for a council that speaks (a silent turn is never given a reply),
   * with a critic's objection to act on, and retries left.
   */
  mayRetryVoice: ({ context }: GuardArgs) =>
    context.decision?.speak === true &&
    context.critics.some((result) => !result.passed) &&
    context.attempt <= context.policy.max_voice_retries,
};

/** The turn's named delays. */
export const turnDelays = {
  stageTimeout: ({ context }: GuardArgs) => context.policy.stage_timeout_ms,
  /** A wave waits for its slowest agent's every attempt, plus a margin for the reply to travel. */
  waveTimeout: ({ context }: GuardArgs) => context.policy.agent_timeout_ms * context.policy.agent_attempts + 250,
};
