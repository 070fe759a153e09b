import { z } from "zod";
import { SessionId, TurnId } from "./ids.ts";
import { Modulators, Sensors } from "./workspace.ts";

export const PlanWavesRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  sensors: Sensors,
  modulators: Modulators,
  /** Tokens the turn's agents may use in all (each agent counts its manifest budget). */
  token_budget: z.number().int().min(0).default(8_000),
});
export type PlanWavesRequest = z.infer<typeof PlanWavesRequest>;

export const PlanWavesReply = z.object({
  /** Always-on agents first, then the scored wave, best first; empty waves are left out. */
  waves: z.array(z.array(z.string())),
  scores: z.record(z.string(), z.number()),
  /** Candidates left out, and why. */
  skipped: z.array(z.object({ agent_id: z.string(), reason: z.enum(["cooldown", "budget", "wave_full"]) })).default([]),
  /** Tokens the planned agents may use, of the turn's budget. */
  budget: z.object({ limit: z.number().int(), planned: z.number().int() }),
});
export type PlanWavesReply = z.infer<typeof PlanWavesReply>;
