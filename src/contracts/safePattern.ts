import { RE2JS } from "re2js";
import { messageOf } from "../errors.ts";

/**
 * Regular expressions that arrive over the wire (JSON Schema `pattern` and
 * `patternProperties` in agents' announced output schemas, recipes'
 * interfaces) are run by RE2 (the `re2js` port), never by a JS RegExp: RE2
 * does not backtrack, so no pattern (`^(a+)+$`) can make a check take time
 * exponential in the text. What RE2 cannot run (backreferences, lookaround)
 * is refused, not run some other way.
 *
 * Linear is not free: RE2's time grows with the text's length times the
 * pattern's compiled size, so patterns and the work one check spends on them
 * are bounded too (the constants below).
 */

/** Longest pattern accepted, in characters (compiling takes time in proportion; zod's longest own pattern is ~420). */
export const MAX_PATTERN_LENGTH = 2_000;

/**
 * Largest compiled pattern accepted, in RE2 instructions (`programSize`):
 * a check costs up to this many steps per character of the text.
 */
export const MAX_PATTERN_PROGRAM = 4_000;

/**
 * Most work one check of a value may spend on patterns, in RE2 steps
 * (compiled size × characters, summed over every string it tests): about a
 * tenth of a second at worst. A value that would need more is refused as too
 * costly to check, rather than checked.
 */
export const MAX_PATTERN_WORK = 20_000_000;

/** The work one check may still spend on patterns (see MAX_PATTERN_WORK). */
export class PatternBudget {
  #left: number;
  constructor(limit = MAX_PATTERN_WORK) {
    this.#left = limit;
  }
  /** Takes `cost` from the budget; false (and nothing taken) when it is not left. */
  spend(cost: number): boolean {
    if (cost > this.#left) {
      this.#left = 0;
      return false;
    }
    this.#left -= cost;
    return true;
  }
}

/** A wire pattern compiled for RE2. */
export interface SafePattern {
  readonly source: string;
  /**
   * Whether the pattern matches somewhere in `text` (JSON Schema patterns are
   * not anchored); null when testing it would overspend `budget`: the text is
   * then too costly to check, and must be refused.
   */
  test(text: string, budget: PatternBudget): boolean | null;
}

/** A pattern from the wire that is not run: why, in one line. */
export class UnsafePatternError extends Error {
  override readonly name = "UnsafePatternError";
}

const compiled = new Map<string, SafePattern | UnsafePatternError>();
/** Compiled patterns kept (announcements repeat the same ones every heartbeat). */
const CACHE_SIZE = 1_000;

/** `text` shortened, quoted and escaped: one line whatever it holds. */
export const quotedPattern = (text: string): string =>
  JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);

// biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
const oneLine = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ").slice(0, 200);

function compile(source: string): SafePattern | UnsafePatternError {
  if (source.length > MAX_PATTERN_LENGTH)
    return new UnsafePatternError(
      `pattern ${quotedPattern(source)} is ${source.length} characters; the limit is ${MAX_PATTERN_LENGTH}`,
    );
  let re: RE2JS;
  try {
    // JS syntax RE2 spells differently (named groups, \u{…}) is translated; the rest is RE2's syntax.
    re = RE2JS.compile(RE2JS.translateRegExp(source));
  } catch (error) {
    return new UnsafePatternError(
      `pattern ${quotedPattern(source)} cannot run on a linear-time engine (no backreferences or lookaround): ${oneLine(messageOf(error))}`,
    );
  }
  const size = re.programSize();
  if (size > MAX_PATTERN_PROGRAM)
    return new UnsafePatternError(
      `pattern ${quotedPattern(source)} is too costly to run (${size} RE2 instructions; the limit is ${MAX_PATTERN_PROGRAM})`,
    );
  return {
    source,
    test: (text, budget) => (budget.spend(size * (text.length + 1)) ? re.test(text) : null),
  };
}

function lookup(source: string): SafePattern | UnsafePatternError {
  let known = compiled.get(source);
  if (!known) {
    known = compile(source);
    if (compiled.size >= CACHE_SIZE) compiled.clear();
    compiled.set(source, known);
  }
  return known;
}

/** Why a wire pattern is not run (one line), or null when it is. */
export function patternProblem(source: string): string | null {
  const known = lookup(source);
  return known instanceof UnsafePatternError ? known.message : null;
}

/** A wire pattern compiled for RE2; throws an UnsafePatternError for one that is not run. */
export function compileSafePattern(source: string): SafePattern {
  const known = lookup(source);
  if (known instanceof UnsafePatternError) throw known;
  return known;
}
