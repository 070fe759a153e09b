import { z } from "zod";
import { AgentId } from "./ids.ts";

/** A skill's id: lowercase, digits, `.`, `_` and `-`, at most 64 characters. */
export const SkillId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "a skill id is lowercase letters, digits, '.', '_' and '-' (at most 64)");

/** A skill's id as the log carries it (docs/skills.md: lowercase, digits, `.`, `_`, `-`; at most 64). */
const SkillRef = z.string().min(1).max(64);

/** At most this many skill activations or completions one agent reply reports. */
export const MAX_SKILL_REPORTS = 32;

/**
 * A skill an agent completed (`ctx.skills.complete`), as its worker checked it
 * against the skill's `output_schema`: the output when it satisfies it, else
 * the issues (the output is then not kept).
 */
export const SkillCompletion = z.object({
  skill: SkillRef,
  ok: z.boolean(),
  /** The output (when `ok`). */
  output: z.unknown().optional(),
  /** Why the output was refused (when not `ok`), one line each, at most 10. */
  issues: z.array(z.string().max(500)).max(10).optional(),
});
export type SkillCompletion = z.infer<typeof SkillCompletion>;

/** What an agent reply reports of its skills' lifecycle (the runner records each as an event). */
export const SkillReplyFields = {
  /** Skills the agent activated (`ctx.skills.activate`), in order. */
  skills_activated: z.array(SkillRef).max(MAX_SKILL_REPORTS).optional(),
  /** Skills the agent completed (`ctx.skills.complete`), in order, each checked. */
  skills_completed: z.array(SkillCompletion).max(MAX_SKILL_REPORTS).optional(),
};

/** Which agent call a skill event comes from. */
const SkillEventRef = {
  skill: SkillRef,
  agent_id: AgentId,
  /** The recipe node, when a recipe's node called the agent. */
  node: z.string().optional(),
};

/** The skill lifecycle's events on a session's log (folded by src/skills/outputs.ts). */
export const SkillEventPayloads = {
  /** An agent activated a skill: it is active in the session until it is completed. */
  SKILL_ACTIVATED: z.object({ ...SkillEventRef }),
  /** An agent completed a skill: its output (`ok`), or the issues its `output_schema` found (a refusal). */
  SKILL_COMPLETED: z.object({
    ...SkillEventRef,
    ok: z.boolean(),
    output: z.unknown().optional(),
    issues: z.array(z.string()).optional(),
  }),
} as const;

/**
 * What one worker's skills refresh did: the skill ids its directory added,
 * removed and changed; or, when the directory could not be loaded (a bad
 * skill file), the one-line error, and the worker keeps its skills as they were.
 */
export const WorkerSkillsRefresh = z.object({
  /** The worker that answered. */
  worker: z.string().max(200),
  /** Its skills directory. */
  dir: z.string().max(1_000),
  added: z.array(SkillRef).default([]),
  removed: z.array(SkillRef).default([]),
  changed: z.array(SkillRef).default([]),
  /** Why the directory was not taken (then nothing changed on that worker). */
  error: z.string().max(1_000).optional(),
});
export type WorkerSkillsRefresh = z.infer<typeof WorkerSkillsRefresh>;

/** A skills refresh's answer: one report per worker with skills that answered. */
export const SkillsRefreshReply = z.object({ workers: z.array(WorkerSkillsRefresh) });
export type SkillsRefreshReply = z.infer<typeof SkillsRefreshReply>;
