import { z } from "zod";
import { SkillId } from "./skill.ts";

/**
 * Skills activated for a whole session from outside its turns (`client.skills.activate`,
 * `conclave skills activate`): ledger events on the session's log, folded with the truth and task
 * ledgers, so the runner learns the session's active set with the ledgers it reads at each turn's
 * start. Every agent of the session's later turns is given them (AgentRequest `active_skills`).
 */

/** At most this many skills are activated for a session at once. */
export const MAX_SESSION_SKILLS = 32;

/**
 * Skills an agent call is given whatever its message routes to (AgentRequest `active_skills`): those
 * activated for the session, and those its recipe (or recipe node) declares. At most 64.
 */
export const ActiveSkillIds = z.array(SkillId).max(2 * MAX_SESSION_SKILLS);
export type ActiveSkillIds = z.infer<typeof ActiveSkillIds>;

/** What the ledgers keep of one activation: the skill, who asked, when, and the stream sequence of its event. */
export const SessionSkillActivation = z.object({
  skill: SkillId,
  /** Who asked (`user`, `user:<id>`, `tenant:<name>`, `agent:<id>`), as the runner that stored it knew it. */
  by: z.string().min(1).max(128),
  at: z.string().max(40),
  seq: z.number().int().min(1),
});
export type SessionSkillActivation = z.infer<typeof SessionSkillActivation>;

/** What `skills.activate` and `skills.deactivate` answer: the skill, whether it is active now, and whether this changed it. */
export const SessionSkillChange = z.object({
  skill: SkillId,
  active: z.boolean(),
  /** False: it already was so (nothing was recorded). */
  changed: z.boolean(),
});
export type SessionSkillChange = z.infer<typeof SessionSkillChange>;

/** The session-skill ledger events and their payloads. */
export const SessionSkillEventPayloads = {
  /** A skill activated for the session: active from its next turn until deactivated or completed. */
  SESSION_SKILL_ACTIVATED: z.object({ skill: SkillId }),
  /**
   * A session's activation ended: `requested` (`skills.deactivate`), or `completed` (an agent's
   * accepted SKILL_COMPLETED of it; recorded by the runner, `by` the agent).
   */
  SESSION_SKILL_DEACTIVATED: z.object({ skill: SkillId, reason: z.enum(["requested", "completed"]) }),
} as const;
