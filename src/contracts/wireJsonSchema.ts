import { z } from "zod";
import { compileSafePattern, PatternBudget, patternProblem, quotedPattern, type SafePattern } from "./safePattern.ts";

/**
 * JSON Schema from the wire (an agent's announced output schema, a recipe's
 * interface) as a zod schema. zod's converter (`z.fromJSONSchema`) compiles
 * `pattern` and `patternProperties` to JS RegExps, which backtrack: one
 * announced pattern such as `^(a+)+$` and an answer to match against it
 * freeze the process checking the answer. Here zod converts the schema
 * without them, and they are checked by RE2 (./safePattern.ts) with JSON
 * Schema's meaning: a `pattern` applies to the strings where its schema
 * applies, `patternProperties` to the keys it matches, and branches of
 * `anyOf`/`oneOf` and a `contains` count only when they hold with their
 * patterns. A schema holding a pattern RE2 cannot run is refused.
 */

type Schema = Record<string, unknown>;
type Path = (string | number)[];
interface Issue {
  path: Path;
  message: string;
}

const isSchema = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Keywords whose value is one subschema (`items` only in its one-schema form). */
const SUBSCHEMA = [
  "additionalProperties",
  "propertyNames",
  "items",
  "additionalItems",
  "contains",
  "not",
  "if",
  "then",
  "else",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contentSchema",
];
/** Keywords whose value is a list of subschemas (`items` in its draft-7 tuple form). */
const SUBSCHEMA_LISTS = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/** Keywords whose value maps names to subschemas. */
const SUBSCHEMA_MAPS = ["properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"];

const pointerToken = (name: string): string => name.replace(/~/g, "~0").replace(/\//g, "~1");

/** Every subschema directly under `node`, with its JSON Pointer from `node`. */
function* subschemas(node: Schema): Generator<[string, Schema]> {
  for (const key of SUBSCHEMA) if (isSchema(node[key])) yield [`/${key}`, node[key]];
  for (const key of SUBSCHEMA_LISTS) {
    const list = node[key];
    if (Array.isArray(list)) for (const [i, sub] of list.entries()) if (isSchema(sub)) yield [`/${key}/${i}`, sub];
  }
  for (const key of SUBSCHEMA_MAPS) {
    const map = node[key];
    if (isSchema(map))
      for (const [name, sub] of Object.entries(map)) if (isSchema(sub)) yield [`/${key}/${pointerToken(name)}`, sub];
  }
}

/** Every schema object in `root` with its JSON Pointer (iteratively: a deep schema cannot overflow the stack). */
function* allSchemas(root: Schema): Generator<[string, Schema]> {
  const stack: [string, Schema][] = [["", root]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    yield next;
    const [pointer, node] = next;
    for (const [at, sub] of subschemas(node)) stack.push([pointer + at, sub]);
  }
}

/**
 * Formats zod's converter checks with its own expression, for which
 * `z.toJSONSchema` also writes that expression as the `pattern`, one RE2 cannot
 * run (lookaround). Such a pattern says nothing the format does not: it is
 * left to the format's check instead of being refused.
 */
const ZOD_FORMATS: Record<string, () => z.ZodType> = {
  duration: () => z.iso.duration(),
  hostname: () => z.hostname(),
  emoji: () => z.emoji(),
};
const zodFormatPatterns = new Map<string, unknown>();
function zodFormatPattern(format: unknown): unknown {
  if (typeof format !== "string" || !Object.hasOwn(ZOD_FORMATS, format)) return undefined;
  if (!zodFormatPatterns.has(format))
    zodFormatPatterns.set(format, (z.toJSONSchema(ZOD_FORMATS[format]!()) as Schema).pattern);
  return zodFormatPatterns.get(format);
}

/**
 * The pattern RE2 must check at `node`, if any: none where zod's converter
 * sees none (an absent or empty one), nor one its format's own check makes.
 */
function patternAt(node: Schema): unknown {
  if (!node.pattern || node.pattern === zodFormatPattern(node.format)) return undefined;
  return node.pattern;
}

/** True when `node` has patternProperties zod's converter would read (a map, or anything else it would misread). */
const hasPatternKeys = (node: Schema): boolean => !!node.patternProperties;

/** Most problems reported for one schema. */
const MAX_PROBLEMS = 3;

/**
 * What makes a wire JSON Schema refused: each `pattern` or
 * `patternProperties` key RE2 does not run (or that is not a string), as
 * `<JSON Pointer>: <why>`, one line each. Empty when every pattern is run.
 */
export function patternProblemsIn(schema: Schema): string[] {
  const problems: string[] = [];
  const add = (pointer: string, problem: string | null) => {
    if (problem) problems.push(`${pointer || "(root)"}: ${problem}`);
  };
  for (const [pointer, node] of allSchemas(schema)) {
    const pattern = patternAt(node);
    if (pattern !== undefined)
      add(`${pointer}/pattern`, typeof pattern === "string" ? patternProblem(pattern) : "a pattern must be a string");
    if (hasPatternKeys(node)) {
      if (!isSchema(node.patternProperties)) add(`${pointer}/patternProperties`, "must map patterns to schemas");
      else
        for (const key of Object.keys(node.patternProperties)) add(`${pointer}/patternProperties`, patternProblem(key));
    }
    if (problems.length >= MAX_PROBLEMS) break;
  }
  return problems.slice(0, MAX_PROBLEMS);
}

/**
 * A JSON Schema as a wire message carries it: an object, refused when it
 * holds a pattern RE2 does not run (see patternProblemsIn).
 */
export const WireJsonSchema = z.record(z.string(), z.unknown()).superRefine((schema, ctx) => {
  for (const problem of patternProblemsIn(schema)) ctx.addIssue({ code: "custom", message: problem });
});

/** True when some schema in `root` has a pattern (even one its format checks) or patternProperties: zod must not see them. */
const hasPatterns = (root: Schema): boolean =>
  [...allSchemas(root)].some(([, node]) => !!node.pattern || hasPatternKeys(node));

type FromJsonSchemaInput = Parameters<typeof z.fromJSONSchema>[0];

/**
 * A wire JSON Schema as a zod schema whose patterns RE2 checks; throws when
 * the schema is refused (see patternProblemsIn) or zod cannot convert it.
 */
export function fromWireJsonSchema(schema: Schema): z.ZodType {
  const problems = patternProblemsIn(schema);
  if (problems.length > 0) throw new Error(`the schema is refused: ${problems.join("; ")}`);
  // Plain data (zod's converter does the same): getters and cycles are gone.
  const root = JSON.parse(JSON.stringify(schema)) as Schema;
  if (!hasPatterns(root)) return z.fromJSONSchema(root as FromJsonSchemaInput);
  const patterned = new PatternedSchema(root);
  return z
    .unknown()
    .superRefine((value, ctx) => {
      for (const issue of patterned.check(value)) ctx.addIssue({ code: "custom", ...issue });
    })
    .pipe(patterned.withoutPatterns(root));
}

/** The root's own schema under its definitions, for `$ref: "#"` in a subschema converted on its own. */
const ROOT_DEFINITION = "__conclave_root";

/** A `$ref` to the root (zod's converter reads `#` and `#/` alike). */
const isRootRef = (ref: unknown): boolean => typeof ref === "string" && /^#\/*$/.test(ref);

/**
 * A schema with patterns, held twice: as written (its patterns checked here,
 * with RE2) and without them (checked by zod), each subschema converted on
 * its own when a branch's validity must be known.
 */
class PatternedSchema {
  readonly #root: Schema;
  /** Where `$ref` pointers find definitions: zod's rule (`$defs` in 2020-12, else `definitions`). */
  readonly #defsKey: "$defs" | "definitions";
  readonly #stripped = new Map<Schema, Schema>();
  readonly #converted = new Map<Schema, z.ZodType>();
  /** Budgets of checks already told they are spent. */
  readonly #overspent = new WeakSet<PatternBudget>();
  /** The root's definitions without patterns, given to every subschema converted on its own. */
  readonly #definitions: Schema;

  constructor(root: Schema) {
    this.#root = root;
    const version = root.$schema;
    this.#defsKey =
      version === "http://json-schema.org/draft-07/schema#" || version === "http://json-schema.org/draft-04/schema#"
        ? "definitions"
        : "$defs";
    const defs = isSchema(root.$defs) ? root.$defs : isSchema(root.definitions) ? root.definitions : {};
    const { $defs: _defs, definitions: _definitions, ...own } = root;
    this.#definitions = Object.fromEntries([
      ...Object.entries(defs).map(([name, sub]) => [name, isSchema(sub) ? this.#strip(sub) : sub]),
      [ROOT_DEFINITION, this.#strip(own)],
    ]);
    // Converted now, so that a subschema zod cannot convert fails here, not while a value is checked.
    for (const [, node] of allSchemas(root)) for (const sub of this.#checkedInFull(node)) this.withoutPatterns(sub);
  }

  /** The subschemas of `node` a value is checked against in full here, each converted on its own. */
  #checkedInFull(node: Schema): Schema[] {
    const found: Schema[] = [];
    for (const key of ["anyOf", "oneOf"]) {
      const list = node[key];
      if (Array.isArray(list)) found.push(...list.filter(isSchema));
    }
    if (isSchema(node.contains)) found.push(node.contains);
    if (isSchema(node.patternProperties)) {
      found.push(...Object.values(node.patternProperties).filter(isSchema));
      if (isSchema(node.additionalProperties)) found.push(node.additionalProperties);
    }
    return found;
  }

  /** Issues of `value` against the patterns of the whole schema (zod checks the rest). */
  check(value: unknown): Issue[] {
    const issues: Issue[] = [];
    this.#check(this.#root, value, [], new PatternBudget(), issues, new Set());
    return issues;
  }

  /** `node` as a zod schema, without its patterns. */
  withoutPatterns(node: Schema): z.ZodType {
    let converted = this.#converted.get(node);
    if (!converted) {
      const stripped = this.#strip(node);
      const { $defs: _defs, definitions: _definitions, ...own } = stripped;
      const alone = {
        ...own,
        ...(typeof this.#root.$schema === "string" ? { $schema: this.#root.$schema } : {}),
        [isSchema(this.#root.$defs) || this.#defsKey === "$defs" ? "$defs" : "definitions"]: this.#definitions,
      };
      converted = z.fromJSONSchema(alone as FromJsonSchemaInput);
      this.#converted.set(node, converted);
    }
    return converted;
  }

  /**
   * `node` without what is checked here: `pattern`, `patternProperties` (and
   * with it `additionalProperties`, whose keys depend on it), `contains` (a
   * count of items valid with their patterns) and `oneOf` (made an `anyOf`:
   * exactly one branch valid with its patterns is checked here). `not` is
   * kept as written: zod refuses any but `{}` without looking inside.
   */
  #strip(node: Schema): Schema {
    const known = this.#stripped.get(node);
    if (known) return known;
    const sub = (value: unknown): unknown => (isSchema(value) ? this.#strip(value) : value);
    const list = (value: unknown): unknown => (Array.isArray(value) ? value.map(sub) : value);
    const map = (value: unknown): unknown =>
      isSchema(value) ? Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, sub(schema)])) : value;
    const patternKeys = isSchema(node.patternProperties);
    const kept: [string, unknown][] = [];
    for (const [key, value] of Object.entries(node)) {
      if (key === "pattern" || key === "patternProperties" || key === "oneOf") continue;
      if (key === "additionalProperties" && patternKeys) continue;
      if ((key === "contains" || key === "minContains" || key === "maxContains") && "contains" in node) continue;
      if (key === "$ref" && isRootRef(value)) kept.push([key, `#/${this.#defsKey}/${ROOT_DEFINITION}`]);
      else if (key === "not" || key === "dependencies") kept.push([key, value]);
      else if (key === "items") kept.push([key, Array.isArray(value) ? list(value) : sub(value)]);
      else if (key === "allOf" || key === "anyOf" || key === "prefixItems") kept.push([key, list(value)]);
      else if (SUBSCHEMA_MAPS.includes(key)) kept.push([key, map(value)]);
      else if (SUBSCHEMA.includes(key)) kept.push([key, sub(value)]);
      else kept.push([key, value]);
    }
    // Built from entries: a key `__proto__` stays a key (an assignment would set the prototype).
    const out: Schema = Object.fromEntries(kept);
    if (Array.isArray(node.oneOf)) {
      const branches = list(node.oneOf);
      if (out.anyOf === undefined) out.anyOf = branches;
      else out.allOf = [...(Array.isArray(out.allOf) ? out.allOf : []), { anyOf: branches }];
    }
    this.#stripped.set(node, out);
    return out;
  }

  /** What a `$ref` names, as zod's converter reads it (the root, or a definition; anything else it refuses). */
  #resolve(ref: string): unknown {
    if (isRootRef(ref)) return this.#root;
    const [first, name] = ref.slice(1).split("/").filter(Boolean);
    if (name === undefined || (first !== "$defs" && first !== "definitions")) return undefined;
    const defs = isSchema(this.#root.$defs) ? this.#root.$defs : this.#root.definitions;
    const key = name.replace(/~1/g, "/").replace(/~0/g, "~");
    return isSchema(defs) && Object.hasOwn(defs, key) ? defs[key] : undefined;
  }

  /** True when `value` satisfies `node` with its patterns. */
  #valid(node: unknown, value: unknown, budget: PatternBudget): boolean {
    if (!isSchema(node)) return node !== false;
    if (!this.withoutPatterns(node).safeParse(value).success) return false;
    const issues: Issue[] = [];
    this.#check(node, value, [], budget, issues, new Set());
    return issues.length === 0;
  }

  /** Issues of `value` against `node` in full: zod's without the patterns, and the patterns'. */
  #checkInFull(node: unknown, value: unknown, path: Path, budget: PatternBudget, out: Issue[]): void {
    if (node === false) {
      out.push({ path, message: "no value is allowed here" });
      return;
    }
    if (!isSchema(node)) return;
    const checked = this.withoutPatterns(node).safeParse(value);
    if (!checked.success)
      for (const issue of checked.error.issues)
        out.push({ path: [...path, ...(issue.path as Path)], message: issue.message });
    this.#check(node, value, path, budget, out, new Set());
  }

  /** Whether `pattern` matches `text`; null, said once per check, when the check's budget is spent. */
  #test(pattern: SafePattern, text: string, path: Path, budget: PatternBudget, out: Issue[]): boolean | null {
    const matched = pattern.test(text, budget);
    if (matched === null && !this.#overspent.has(budget)) {
      this.#overspent.add(budget);
      out.push({ path, message: `too costly to check against the pattern ${quotedPattern(pattern.source)}` });
    }
    return matched;
  }

  /**
   * The pattern issues of `value` against `node`. `refs`: the definitions
   * entered through `$ref` for this same value (a reference cycle ends there).
   */
  #check(node: unknown, value: unknown, path: Path, budget: PatternBudget, out: Issue[], refs: Set<Schema>): void {
    if (!isSchema(node)) return;
    if (typeof node.$ref === "string") {
      const target = this.#resolve(node.$ref);
      if (isSchema(target) && !refs.has(target))
        this.#check(target, value, path, budget, out, new Set(refs).add(target));
    }
    const pattern = patternAt(node);
    if (typeof pattern === "string" && typeof value === "string") {
      if (this.#test(compileSafePattern(pattern), value, path, budget, out) === false)
        out.push({ path, message: `Invalid string: must match pattern ${quotedPattern(pattern)}` });
    }
    if (isSchema(value)) this.#checkObject(node, value, path, budget, out);
    if (Array.isArray(value)) this.#checkArray(node, value, path, budget, out);
    if (Array.isArray(node.allOf)) for (const branch of node.allOf) this.#check(branch, value, path, budget, out, refs);
    if (Array.isArray(node.anyOf) && node.anyOf.length > 0) {
      if (!node.anyOf.some((branch) => this.#valid(branch, value, budget)))
        out.push({ path, message: "matches none of the schemas it may match (anyOf), with their patterns" });
    }
    if (Array.isArray(node.oneOf) && node.oneOf.length > 0) {
      const matching = node.oneOf.filter((branch) => this.#valid(branch, value, budget)).length;
      if (matching !== 1)
        out.push({
          path,
          message: `must match exactly one of the schemas it may match (oneOf), with their patterns; it matches ${matching}`,
        });
    }
  }

  #checkObject(node: Schema, value: Schema, path: Path, budget: PatternBudget, out: Issue[]): void {
    const properties = isSchema(node.properties) ? node.properties : {};
    const patternKeys = isSchema(node.patternProperties)
      ? Object.entries(node.patternProperties).map(([key, sub]) => [compileSafePattern(key), sub] as const)
      : null;
    for (const key of Object.keys(value)) {
      const at = [...path, key];
      const named = Object.hasOwn(properties, key);
      if (named) this.#check(properties[key], value[key], at, budget, out, new Set());
      let matched = false;
      for (const [pattern, sub] of patternKeys ?? []) {
        if (this.#test(pattern, key, at, budget, out) !== true) continue;
        matched = true;
        this.#checkInFull(sub, value[key], at, budget, out);
      }
      if (!named && !matched) {
        // With patternProperties, zod was given no additionalProperties: they are checked here, in full.
        if (patternKeys) this.#checkInFull(node.additionalProperties, value[key], at, budget, out);
        else this.#check(node.additionalProperties, value[key], at, budget, out, new Set());
      }
      if (node.propertyNames !== undefined) this.#check(node.propertyNames, key, at, budget, out, new Set());
    }
  }

  #checkArray(node: Schema, value: unknown[], path: Path, budget: PatternBudget, out: Issue[]): void {
    const tuple = Array.isArray(node.prefixItems) ? node.prefixItems : Array.isArray(node.items) ? node.items : [];
    const rest = Array.isArray(node.items) ? node.additionalItems : node.items;
    for (const [index, item] of value.entries())
      this.#check(index < tuple.length ? tuple[index] : rest, item, [...path, index], budget, out, new Set());
    if (node.contains === undefined) return;
    const least = typeof node.minContains === "number" ? node.minContains : 1;
    const most = typeof node.maxContains === "number" ? node.maxContains : Number.POSITIVE_INFINITY;
    const count = value.filter((item) => this.#valid(node.contains, item, budget)).length;
    if (count < least || count > most)
      out.push({
        path,
        message: `must contain ${most === Number.POSITIVE_INFINITY ? `at least ${least}` : `${least} to ${most}`} matching item(s), with their patterns; it contains ${count}`,
      });
  }
}
