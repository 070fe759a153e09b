import type { z } from "zod";
import { fromWireJsonSchema } from "../contracts/wireJsonSchema.ts";

type Schema = Record<string, unknown>;

/**
 * `required` names properties a schema need not list; zod's converter only
 * enforces the listed ones. Each unlisted required name is listed (any
 * value), in this object and every nested one, so `{required: ["x"]}`
 * means what JSON Schema says.
 */
function listRequired(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(listRequired);
  if (typeof schema !== "object" || schema === null) return schema;
  const copy: Schema = Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, listRequired(value)]));
  if (Array.isArray(copy.required)) {
    const properties = { ...((copy.properties as Schema | undefined) ?? {}) };
    for (const name of copy.required) if (typeof name === "string" && !(name in properties)) properties[name] = {};
    copy.properties = properties;
  }
  return copy;
}

/**
 * A recipe's JSON Schema (`interface.inputs`, `interface.outputs`) as a zod
 * schema, its patterns checked by RE2 (recipes arrive over the wire); throws
 * when it is not usable, or holds a pattern RE2 cannot run.
 */
export function fromRecipeJsonSchema(schema: Schema): z.ZodType {
  return fromWireJsonSchema(listRequired(schema) as Schema);
}
