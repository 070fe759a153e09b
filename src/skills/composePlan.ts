/**
 * A compose plan: skills in the order they are to run, each reading the
 * outputs of the skills it `consumes` (definition.ts). A plan is valid when
 * every skill exists and every skill it consumes is an earlier step of the
 * plan (the one whose completion records that output). Pure: the skills in,
 * the problems out.
 */
import type { SkillDefinition } from "./definition.ts";

/** One reason a compose plan cannot run, naming its step and skill. */
export interface ComposePlanProblem {
  /** 0-based position of the step in the plan. */
  readonly step: number;
  readonly skill: string;
  /** `unknown_skill`: no such skill; `missing_input`: a skill it consumes is not an earlier step. */
  readonly code: "unknown_skill" | "missing_input";
  /** The consumed skill no earlier step produces (`missing_input`). */
  readonly missing?: string;
  /** One line, naming the step, the skill and what is missing. */
  readonly message: string;
}

/** What `validateComposePlan` answers: valid when it found no problem. */
export interface ComposePlanCheck {
  readonly valid: boolean;
  readonly problems: readonly ComposePlanProblem[];
}

const shown = (id: string) => JSON.stringify(id).slice(0, 80);

/**
 * Checks a compose plan against the skills there are: each step's skill
 * must exist, and each skill it consumes must be produced by an earlier
 * step. Every problem is returned, in plan order; an empty plan is valid.
 */
export function validateComposePlan(
  plan: readonly string[],
  skills: readonly Pick<SkillDefinition, "id" | "consumes">[],
): ComposePlanCheck {
  const byId = new Map(skills.map((skill) => [skill.id, skill]));
  const problems: ComposePlanProblem[] = [];
  const produced = new Set<string>();
  plan.forEach((skill, step) => {
    const definition = typeof skill === "string" ? byId.get(skill) : undefined;
    const where = `step ${step + 1} (${shown(String(skill))})`;
    if (!definition) {
      problems.push({ step, skill: String(skill), code: "unknown_skill", message: `${where}: no such skill` });
      return;
    }
    for (const input of definition.consumes ?? []) {
      if (produced.has(input)) continue;
      const later = plan.indexOf(input, step + 1);
      const why =
        later >= 0
          ? `it comes later, at step ${later + 1}`
          : byId.has(input)
            ? "no earlier step runs it"
            : "it is not a skill";
      problems.push({
        step,
        skill,
        code: "missing_input",
        missing: input,
        message: `${where} consumes the output of ${shown(input)}, which no earlier step produces: ${why}`,
      });
    }
    produced.add(skill);
  });
  return { valid: problems.length === 0, problems };
}
