import { z } from "zod";
import { AgentId, SessionId, TurnId } from "./ids.ts";
import { Usage } from "./usage.ts";
import { Claim, Episode, Modulators, Sensors, Stance, StanceDelta } from "./workspace.ts";

export const AGENCIES = ["emotion", "reasoning", "social", "planning", "inhibition", "monitoring"] as const;
export const Agency = z.enum(AGENCIES);
export type Agency = z.infer<typeof Agency>;

/** ALWAYS_ON agents run in wave 0; MONITOR agents get a base score; SCHEDULED only when scored. */
export const AgentPriority = z.enum(["ALWAYS_ON", "MONITOR", "SCHEDULED"]);
export type AgentPriority = z.infer<typeof AgentPriority>;

/** A claim as an agent proposes it; the workspace adds source, support and opposition. */
export const ProposedClaim = z.object({
  id: z.string().min(1).max(120),
  text: z.string().min(1).max(500),
  confidence: z.number().min(0).max(1),
});
export type ProposedClaim = z.infer<typeof ProposedClaim>;

/** What every agent returns: claims, proposals for the council, a stance delta. */
export const AgentOutput = z.object({
  claims: z.array(ProposedClaim).max(8),
  /** Claim ids (from any agent) this agent backs or contests. */
  supports: z.array(z.string()).max(16).default([]),
  opposes: z.array(z.string()).max(16).default([]),
  /** In a revision round: own claims the agent takes back, and claims it stops opposing. */
  withdraws: z.array(z.string()).max(16).default([]),
  concedes: z.array(z.string()).max(16).default([]),
  /** Suggestions for the council: what to say, and what never to say. */
  proposals: z.array(z.object({ kind: z.enum(["say", "do_not", "ask"]), text: z.string().min(1).max(300) })).max(8),
  stance_delta: StanceDelta,
});
export type AgentOutput = z.infer<typeof AgentOutput>;

export const AgentManifest = z.object({
  id: AgentId,
  agency: Agency,
  priority: AgentPriority,
  /** Sensor names whose value above 0.3 makes this agent a candidate. */
  triggers: z.array(z.string()),
  cooldown_s: z.number().min(0),
  /** Most tokens one answer of this agent may use (LLM mode); counted against the turn's budget. */
  token_budget: z.number().int().min(0),
  description: z.string(),
});
export type AgentManifest = z.infer<typeof AgentManifest>;

/** Everything an agent may read: a snapshot of the turn's workspace. */
export const AgentContext = z.object({
  user_message: z.string(),
  sensors: Sensors,
  modulators: Modulators,
  stance: Stance,
  claims: z.array(Claim),
  episodes: z.array(Episode),
});
export type AgentContext = z.infer<typeof AgentContext>;

export const AgentRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  agent_id: AgentId,
  wave: z.number().int().min(0),
  /**
   * `respond`: the agent's first say in a wave. `revise`: a deliberation round
   * asks it to reconsider the contested claims in `context.claims`.
   */
  mode: z.enum(["respond", "revise"]).default("respond"),
  /** The deliberation round, in `revise` mode. */
  round: z.number().int().min(0).default(0),
  /** The agent must reply within this budget or be counted as failed. */
  timeout_ms: z.number().int().positive(),
  context: AgentContext,
});
export type AgentRequest = z.infer<typeof AgentRequest>;

export const AgentReply = z.object({
  agent_id: AgentId,
  output: AgentOutput,
  elapsed_ms: z.number().min(0),
  /** Which worker process served it (`<host>:<pid>`), for provenance. */
  worker: z.string(),
  usage: Usage.optional(),
});
export type AgentReply = z.infer<typeof AgentReply>;
