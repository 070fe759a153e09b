import { z } from "zod";
import { SessionId, TurnId } from "./ids.ts";
import { Modulators, Sensors } from "./workspace.ts";

export const PlanWavesRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  sensors: Sensors,
  modulators: Modulators,
});
export type PlanWavesRequest = z.infer<typeof PlanWavesRequest>;

export const PlanWavesReply = z.object({
  /** Always-on agents first, then the scored wave, best first; empty waves are left out. */
  waves: z.array(z.array(z.string())),
  scores: z.record(z.string(), z.number()),
});
export type PlanWavesReply = z.infer<typeof PlanWavesReply>;
