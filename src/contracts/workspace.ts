import { z } from "zod";
import { SessionId } from "./ids.ts";

const unit = z.number().min(0).max(1);
const signed = z.number().min(-1).max(1);

/** The nine fast sensors of the pipeline, each a probability in [0, 1]. */
export const SENSOR_NAMES = [
  "vulnerability",
  "advice_requested",
  "relational_bid",
  "ai_feelings_probe",
  "humor_masking",
  "rupture",
  "ambiguity",
  "safety_risk",
  "prompt_injection",
] as const;
export const SensorName = z.enum(SENSOR_NAMES);
export type SensorName = z.infer<typeof SensorName>;
export const Sensors = z.object(
  Object.fromEntries(SENSOR_NAMES.map((name) => [name, unit])) as Record<SensorName, typeof unit>,
);
export type Sensors = z.infer<typeof Sensors>;

/** Global modulators: slow-moving dials that bias scheduling and the council. */
export const Modulators = z.object({
  arousal: unit,
  time_pressure: unit,
  social_risk: unit,
  uncertainty: unit,
});
export type Modulators = z.infer<typeof Modulators>;

/** The turn's stance: where the system stands towards the user right now. */
export const Stance = z.object({
  valence: signed,
  warmth: signed,
  caution: signed,
  curiosity: signed,
});
export type Stance = z.infer<typeof Stance>;
export const StanceDelta = Stance.partial();
export type StanceDelta = z.infer<typeof StanceDelta>;

/** A claim an agent puts into the workspace; others may support or oppose it. */
export const Claim = z.object({
  id: z.string().min(1).max(120),
  text: z.string().min(1).max(500),
  source: z.string(),
  confidence: unit,
  support: z.array(z.string()),
  opposition: z.array(z.string()),
});
export type Claim = z.infer<typeof Claim>;

export const Episode = z.object({
  /** The runtime's session id (a subject token: the episode is stored under it). */
  session_id: SessionId,
  turn_id: z.number().int(),
  user_text: z.string(),
  response: z.string(),
  intent: z.string(),
  ts: z.number(),
  /**
   * The tools the turn's calls invoked (each TOOL_CALL_FINISHED's tool, ok or not; a denied call
   * invoked none), each once, sorted. Absent: none, or an episode older than the field.
   */
  tools_invoked: z.array(z.string().min(1).max(256)).max(256).optional(),
});
export type Episode = z.infer<typeof Episode>;

export const neutralModulators = (): Modulators => ({
  arousal: 0,
  time_pressure: 0,
  social_risk: 0,
  uncertainty: 0,
});

export const neutralStance = (): Stance => ({ valence: 0, warmth: 0, caution: 0, curiosity: 0 });
