/**
 * A completed skill's output checked against the skill's declared
 * `output_schema` (JSON Schema), with the converter recipe outputs use
 * (`fromRecipeJsonSchema`): what `ctx.skills.complete` reports.
 */
import type { z } from "zod";
import { describeIssues } from "../contracts/issues.ts";
import type { SkillCompletion } from "../contracts/skill.ts";
import { messageOf, singleLine } from "../errors.ts";
import { fromRecipeJsonSchema } from "../recipes/jsonSchema.ts";
import type { SkillDefinition } from "./definition.ts";

/** The largest output a completion may record (its JSON, in bytes): the session's log keeps it. */
export const MAX_SKILL_OUTPUT_BYTES = 64 * 1024;

const compiled = new WeakMap<object, z.ZodType | Error>();

/** The skill's output schema as zod (null: it declares none); an unusable schema is an Error, kept. */
function schemaOf(definition: SkillDefinition): z.ZodType | Error | null {
  const schema = definition.output_schema;
  if (!schema) return null;
  let found = compiled.get(schema);
  if (!found) {
    try {
      found = fromRecipeJsonSchema(schema);
    } catch (error) {
      found = new Error(singleLine(messageOf(error), 300));
    }
    compiled.set(schema, found);
  }
  return found;
}

/**
 * Checks `output` as the log would keep it (its JSON): a skill without an
 * `output_schema` takes any JSON value; one with a schema only what it
 * accepts. Never throws: a refusal carries its issues, one line each.
 */
export function checkSkillOutput(definition: SkillDefinition, output: unknown): SkillCompletion {
  const skill = definition.id;
  let json: string | undefined;
  try {
    json = JSON.stringify(output);
  } catch (error) {
    return { skill, ok: false, issues: [`the output is not JSON: ${singleLine(messageOf(error), 200)}`] };
  }
  if (json === undefined) return { skill, ok: false, issues: ["the output is not JSON (undefined)"] };
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_SKILL_OUTPUT_BYTES)
    return { skill, ok: false, issues: [`the output is ${bytes} bytes as JSON; at most ${MAX_SKILL_OUTPUT_BYTES}`] };
  const value: unknown = JSON.parse(json);
  const schema = schemaOf(definition);
  if (schema === null) return { skill, ok: true, output: value };
  if (schema instanceof Error)
    return { skill, ok: false, issues: [`the skill's output_schema cannot be used: ${schema.message}`] };
  const checked = schema.safeParse(value);
  if (checked.success) return { skill, ok: true, output: value };
  return {
    skill,
    ok: false,
    issues: describeIssues(checked.error, { limit: 10 }).map((line) => singleLine(line, 500)),
  };
}
