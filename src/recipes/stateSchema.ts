/**
 * A recipe's `state` (the StateDefinition): the JSON Schema of each shared
 * blackboard variable (`state.properties` of a graph recipe,
 * `state.data_schema` of a workflow manifest). A write that leaves a declared
 * variable with a value its schema refuses is refused; variables the state
 * does not declare take any value.
 */
import type { z } from "zod";
import { describeIssues } from "../contracts/issues.ts";
import { messageOf, singleLine } from "../errors.ts";
import { fromRecipeJsonSchema } from "./jsonSchema.ts";
import { pathSegments } from "./paths.ts";
import type { Recipe } from "./recipe.ts";

/** A declared variable's schema that is not a usable JSON Schema. */
export class StateSchemaError extends TypeError {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`'${variable}': ${message}`);
  }
}

const compiled = new WeakMap<object, Map<string, z.ZodType>>();

/**
 * Each declared variable's schema as zod; throws naming the variable when
 * one is not a usable JSON Schema (loading reports it with its path).
 */
export function stateSchemas(properties: Record<string, unknown>): Map<string, z.ZodType> {
  let schemas = compiled.get(properties);
  if (schemas) return schemas;
  schemas = new Map();
  for (const [name, schema] of Object.entries(properties)) {
    if (typeof schema !== "object" || schema === null || Array.isArray(schema))
      throw new StateSchemaError(name, "a variable's schema is a JSON Schema object");
    try {
      schemas.set(name, fromRecipeJsonSchema(schema as Record<string, unknown>));
    } catch (error) {
      throw new StateSchemaError(name, singleLine(messageOf(error), 300));
    }
  }
  compiled.set(properties, schemas);
  return schemas;
}

/**
 * Why writing at `path` (a dotted blackboard path) is refused, given the
 * blackboard as the write leaves it: its variable (the path's first segment)
 * is declared and its value does not match; null when the write stands.
 */
export function stateWriteProblem(recipe: Recipe, blackboard: Record<string, unknown>, path: string): string | null {
  if (!recipe.state_properties) return null;
  const variable = pathSegments(path)[0]!;
  const schema = stateSchemas(recipe.state_properties).get(variable);
  if (!schema) return null;
  const checked = schema.safeParse(blackboard[variable]);
  if (checked.success) return null;
  const issues = describeIssues(checked.error, { at: variable, limit: 3, join: "; " });
  return singleLine(
    `blackboard variable '${variable}'${path === variable ? "" : ` (written at '${path}')`} breaks the recipe's state: ${issues}`,
    500,
  );
}
