/**
 * `ctx.skills` for one agent call: the skills its message loaded (an array,
 * as before) that can also activate a skill and complete one. Activations and
 * completions are collected for the agent's reply; the runner records each as
 * an event on the session's log (SKILL_ACTIVATED, SKILL_COMPLETED).
 */
import type { SkillCompletion } from "../contracts/skill.ts";
import { MAX_SKILL_REPORTS } from "../contracts/skill.ts";
import { ConclaveError } from "../errors.ts";
import type { AgentSkill, SkillCatalog } from "./agentSkills.ts";
import { checkSkillOutput } from "./outputCheck.ts";

/** An agent named a skill its worker does not have (or has no skills at all). */
export class UnknownSkillError extends ConclaveError<"not_found"> {
  constructor(message: string) {
    super("not_found", message);
  }
}

/** An agent reported more activations or completions than one reply carries. */
export class SkillReportLimitError extends ConclaveError<"invalid_request"> {
  constructor(what: string) {
    super("invalid_request", `an agent call may ${what} at most ${MAX_SKILL_REPORTS} skills`);
  }
}

/** The skills an agent is given (`ctx.skills`): the loaded ones, and the skill lifecycle. */
export interface AgentSkills extends ReadonlyArray<AgentSkill> {
  /**
   * Activates a skill of the worker's directory (also one its message did not load, such as a
   * `user` skill): resolves to it with its instructions. The reply reports it and the runner
   * records SKILL_ACTIVATED; it stays active in the session until completed. Rejects with
   * UnknownSkillError (`not_found`) for a skill the worker does not have.
   */
  activate(id: string): Promise<AgentSkill>;
  /**
   * Completes a skill with its output, checked against the skill's `output_schema`: `ok` with the
   * output as recorded, or not `ok` with the issues (a refusal, recorded as such). Either way the
   * runner records SKILL_COMPLETED. Throws UnknownSkillError for a skill the worker does not have.
   */
  complete(id: string, output: unknown): SkillCompletion;
}

/** The fields an agent reply reports of its skills (none when nothing happened). */
export interface SkillReport {
  skills_activated?: string[];
  skills_completed?: SkillCompletion[];
}

const wrongId = (id: unknown): string => JSON.stringify(id).slice(0, 80);

/**
 * `ctx.skills` over the loaded skills and the worker's catalog (absent: a
 * worker without skills, where `activate` and `complete` reject), and the
 * report of what the agent did with them.
 */
export function agentSkillsView(
  loaded: readonly AgentSkill[],
  catalog: SkillCatalog | undefined,
): { skills: AgentSkills; report: () => SkillReport } {
  const activated: string[] = [];
  const completed: SkillCompletion[] = [];
  const definitionOf = (id: string) => {
    const definition = typeof id === "string" ? catalog?.definition(id) : undefined;
    if (definition) return definition;
    if (!catalog) throw new UnknownSkillError(`no skill ${wrongId(id)}: this worker has no skills directory`);
    const known = catalog.ids();
    const shown = known.slice(0, 20).join(", ") + (known.length > 20 ? ", …" : "");
    throw new UnknownSkillError(`no skill ${wrongId(id)} on this worker; its skills are: ${shown || "none"}`);
  };
  const lifecycle = {
    async activate(id: string): Promise<AgentSkill> {
      definitionOf(id);
      const given = loaded.find((skill) => skill.id === id) ?? (await catalog!.load(id));
      if (!activated.includes(id)) {
        if (activated.length >= MAX_SKILL_REPORTS) throw new SkillReportLimitError("activate");
        activated.push(id);
      }
      return given;
    },
    complete(id: string, output: unknown): SkillCompletion {
      const definition = definitionOf(id);
      if (completed.length >= MAX_SKILL_REPORTS) throw new SkillReportLimitError("complete");
      const result = checkSkillOutput(definition, output);
      completed.push(result);
      return result;
    },
  };
  const skills = [...loaded] as unknown as AgentSkills;
  // Not enumerable: the array still reads, compares and serialises as the loaded skills.
  for (const name of ["activate", "complete"] as const)
    Object.defineProperty(skills, name, { value: lifecycle[name], enumerable: false });
  return {
    skills: Object.freeze(skills),
    report: () => ({
      ...(activated.length > 0 ? { skills_activated: [...activated] } : {}),
      ...(completed.length > 0 ? { skills_completed: [...completed] } : {}),
    }),
  };
}
