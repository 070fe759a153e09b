import { readdirSync, readFileSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, extname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { describeIssues } from "../contracts/issues.ts";
import { SkillId } from "../contracts/skill.ts";
import { messageOf, singleLine } from "../errors.ts";
import { SkillDefinition, SkillDefinitionError } from "./definition.ts";

/** A skill as loaded: its definition and the file it came from. */
export interface Skill {
  readonly definition: SkillDefinition;
  /** The file it was read from. */
  readonly file: string;
}

/** The most skill files a directory may hold. */
export const MAX_SKILLS = 1_000;
/** The largest skill file (or instructions file), in bytes. */
export const MAX_SKILL_FILE_BYTES = 256 * 1024;

const DEFINITION_EXTENSIONS = new Set([".yaml", ".yml", ".json", ".md"]);

/**
 * Reads every skill of a directory: `*.yaml`, `*.yml` and `*.json` files of
 * one SkillDefinition each, and markdown files (`*.md`) whose YAML front
 * matter is the definition and whose body is its instructions; and in each
 * subdirectory, its `SKILL.md` (the other files there are the skill's own,
 * e.g. an `instructions_uri`'s). Throws a
 * {@link SkillDefinitionError} naming the file and the field of the first bad
 * one, or two skills with one id.
 */
export function loadSkills(dir: string): Skill[] {
  const root = resolve(dir);
  let files: string[];
  try {
    files = definitionFiles(root);
  } catch (error) {
    throw new SkillDefinitionError(`cannot read the skills directory ${dir}: ${messageOf(error)}`);
  }
  if (files.length > MAX_SKILLS) throw new SkillDefinitionError(`${dir} holds over ${MAX_SKILLS} skill files`);
  const skills: Skill[] = [];
  const seen = new Map<string, string>();
  for (const file of files) {
    const skill = readSkill(root, file);
    const other = seen.get(skill.definition.id);
    if (other) throw new SkillDefinitionError(`${file}: skill id '${skill.definition.id}' is also ${other}'s`);
    seen.set(skill.definition.id, file);
    skills.push(skill);
  }
  return skills.sort((a, b) => a.definition.id.localeCompare(b.definition.id));
}

function definitionFiles(root: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    const path = join(root, entry.name);
    if (entry.isFile() && DEFINITION_EXTENSIONS.has(extname(entry.name))) files.push(path);
    else if (entry.isDirectory() && !entry.name.startsWith("."))
      for (const inner of readdirSync(path, { withFileTypes: true }))
        if (inner.isFile() && inner.name.toUpperCase() === "SKILL.MD") files.push(join(path, inner.name));
  }
  return files.sort();
}

/** A markdown file's front matter (the definition) and body (its instructions). */
const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

function readSkill(root: string, file: string): Skill {
  const where = relative(process.cwd(), file) || basename(file);
  const text = readLimited(file, where);
  let raw: unknown;
  try {
    if (extname(file) === ".md") {
      const match = FRONT_MATTER.exec(text);
      if (!match) throw new Error("a markdown skill starts with YAML front matter between '---' lines");
      const front = parseYaml(match[1] ?? "") as Record<string, unknown> | null;
      const body = (match[2] ?? "").trim();
      raw = { ...(front ?? {}), ...(body && front?.instructions_uri === undefined ? { instructions: body } : {}) };
    } else raw = parseYaml(text);
  } catch (error) {
    throw new SkillDefinitionError(`${where}: ${messageOf(error).split("\n")[0]}`);
  }
  const parsed = SkillDefinition.safeParse(withIdFromName(raw, where));
  if (!parsed.success) throw new SkillDefinitionError(`${where}: ${describeIssues(parsed.error, { join: "; " })}`);
  const definition = parsed.data;
  if (definition.instructions_uri !== undefined) {
    const target = instructionsPath(root, file, definition.instructions_uri, where);
    if (!statSync(target, { throwIfNoEntry: false })?.isFile())
      throw new SkillDefinitionError(`${where}: instructions_uri ${definition.instructions_uri} is not a file`);
  }
  return { definition, file };
}

/**
 * A definition without an `id` takes its `name` as the id (the Agent Skills format has no
 * `id`: its `name` is one), when the name is a valid id; else a one-line error asking for an id.
 */
function withIdFromName(raw: unknown, where: string): unknown {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return raw;
  const { id, name } = raw as Record<string, unknown>;
  if (id !== undefined || typeof name !== "string") return raw;
  if (!SkillId.safeParse(name).success)
    throw new SkillDefinitionError(
      `${where}: no id, and its name '${singleLine(name, 80)}' is not one (lowercase letters, digits, '.', '_' and '-', at most 64): give an id`,
    );
  return { ...raw, id: name };
}

function readLimited(file: string, where: string): string {
  const size = statSync(file).size;
  if (size > MAX_SKILL_FILE_BYTES)
    throw new SkillDefinitionError(`${where}: larger than ${MAX_SKILL_FILE_BYTES} bytes`);
  return readFileSync(file, "utf8");
}

/** Where `instructions_uri` points: relative to the skill's file, and inside the skills directory. */
function instructionsPath(root: string, file: string, uri: string, where: string): string {
  const path = uri.startsWith("file:") ? fileURLToPath(uri) : uri;
  const target = isAbsolute(path) ? path : resolve(file, "..", path);
  const inside = relative(root, target);
  if (inside.startsWith("..") || isAbsolute(inside))
    throw new SkillDefinitionError(`${where}: instructions_uri ${uri} leaves the skills directory`);
  return target;
}

/** A skill's instructions: given inline, or read from its `instructions_uri` (when it is loaded, not before). */
export async function instructionsOf(skill: Skill, root: string): Promise<string> {
  const { instructions, instructions_uri } = skill.definition;
  if (instructions !== undefined) return instructions;
  const where = relative(process.cwd(), skill.file) || basename(skill.file);
  const target = instructionsPath(resolve(root), skill.file, instructions_uri as string, where);
  const text = await readFile(target, "utf8");
  if (Buffer.byteLength(text) > MAX_SKILL_FILE_BYTES)
    throw new SkillDefinitionError(`${where}: its instructions are larger than ${MAX_SKILL_FILE_BYTES} bytes`);
  return text;
}
