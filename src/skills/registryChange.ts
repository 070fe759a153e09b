/** What changed between two loads of a skills directory (a refresh's answer). */
import { isDeepStrictEqual } from "node:util";
import type { Skill } from "./load.ts";

/** The skill ids a refresh added, removed and changed, each sorted. */
export interface SkillsChange {
  readonly added: string[];
  readonly removed: string[];
  /** Skills in both loads whose definition (or file) differs. */
  readonly changed: string[];
}

/** Compares two loads of a directory by skill id. */
export function skillsChange(before: readonly Skill[], after: readonly Skill[]): SkillsChange {
  const old = new Map(before.map((skill) => [skill.definition.id, skill]));
  const now = new Map(after.map((skill) => [skill.definition.id, skill]));
  const added = [...now.keys()].filter((id) => !old.has(id));
  const removed = [...old.keys()].filter((id) => !now.has(id));
  const changed = [...now.entries()]
    .filter(([id, skill]) => {
      const was = old.get(id);
      return was !== undefined && (was.file !== skill.file || !isDeepStrictEqual(was.definition, skill.definition));
    })
    .map(([id]) => id);
  return { added: added.sort(), removed: removed.sort(), changed: changed.sort() };
}
