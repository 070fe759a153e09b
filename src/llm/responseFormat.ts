import { z } from "zod";
import { loadedOpenAI, type loadOpenAI } from "./openaiPackage.ts";

/**
 * A chat completion's `response_format` asking for JSON Schema output: the shape of the openai
 * client's `ResponseFormatJSONSchema`, declared here so that Conclave's types do not need the
 * optional `openai` package installed.
 */
export interface ResponseFormatJSONSchema {
  type: "json_schema";
  json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null };
}

const cache = new WeakMap<z.ZodType, Map<string, ResponseFormatJSONSchema>>();

/**
 * The `response_format` that asks for JSON matching `schema`. Strict (OpenAI structured outputs)
 * when the schema allows it; otherwise — optional fields, a non-object root, records — a plain
 * JSON Schema without `strict`, which local servers still use for constrained decoding.
 * Built once per schema and name. Needs the `openai` package loaded ({@link loadOpenAI}), as it is
 * once a model has been called.
 */
export function responseFormatFor(schema: z.ZodType, name: string): ResponseFormatJSONSchema {
  const byName = cache.get(schema) ?? new Map<string, ResponseFormatJSONSchema>();
  cache.set(schema, byName);
  const format = byName.get(name) ?? buildResponseFormat(schema, name);
  byName.set(name, format);
  return format;
}

function buildResponseFormat(schema: z.ZodType, name: string): ResponseFormatJSONSchema {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw new TypeError(`schemaName ${JSON.stringify(name)} must be 1-64 letters, digits, _ or -`);
  }
  const openai = loadedOpenAI();
  if (!openai) throw new Error("responseFormatFor needs the openai package: await loadOpenAI() first");
  try {
    return openai.zodResponseFormat(schema, name);
  } catch {
    // zodResponseFormat refuses what OpenAI strict mode cannot express; fall back to the plain schema.
    const jsonSchema = z.toJSONSchema(schema, { target: "draft-7", io: "input", unrepresentable: "any" });
    return { type: "json_schema", json_schema: { name, schema: jsonSchema, strict: false } };
  }
}
