import { isDeepStrictEqual } from "node:util";
import { ConclaveError } from "../errors.ts";
import { readPath } from "./paths.ts";

/**
 * The conditions of switch cases and edges (`result == 'success'`,
 * `review.score >= 0.8 and not draft.empty`): a small language over the
 * blackboard, parsed into a JSON tree and evaluated by walking it. Nothing
 * from a document is ever run as code.
 *
 *   or      := and (("or" | "||") and)*
 *   and     := unary (("and" | "&&") unary)*
 *   unary   := ("not" | "!") unary | compare
 *   compare := value (("==" | "!=" | "<" | "<=" | ">" | ">=" | "in") value)?
 *   value   := path | 'string' | "string" | number | true | false | null | [value, ...] | "(" or ")"
 *
 * Equality is strict (no coercion); ordering holds only between two numbers
 * or two strings; a variable that is not set is `undefined`.
 */
export type Expr =
  | { op: "lit"; value: string | number | boolean | null }
  | { op: "var"; path: string }
  | { op: "list"; items: Expr[] }
  | { op: "not"; arg: Expr }
  | { op: "and" | "or"; args: Expr[] }
  | { op: "==" | "!=" | "<" | "<=" | ">" | ">=" | "in"; left: Expr; right: Expr };

/** A condition that does not parse: the message names the column and what was expected. */
export class RecipeExpressionError extends ConclaveError<"invalid_recipe"> {
  constructor(source: string, column: number, expected: string) {
    super("invalid_recipe", `condition '${source}': at column ${column}: expected ${expected}`);
  }
}

/** Longest condition, in characters: a condition is a line of a document, not a program. */
export const MAX_EXPRESSION_LENGTH = 1_000;
/** Deepest nesting of parentheses, lists and `not`: bounds the parser's recursion. */
const MAX_DEPTH = 32;

type Token = { kind: "num" | "str" | "word" | "op"; text: string; value?: string | number; at: number };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const at = i + 1;
    if (c === "'" || c === '"') {
      let text = "";
      i++;
      while (i < source.length && source[i] !== c) {
        if (source[i] === "\\" && i + 1 < source.length) i++;
        text += source[i];
        i++;
      }
      if (i >= source.length) throw new RecipeExpressionError(source, at, `a closing ${c}`);
      i++;
      tokens.push({ kind: "str", text, value: text, at });
      continue;
    }
    const number = /^-?\d+(\.\d+)?/.exec(source.slice(i));
    if (number && (c !== "-" || tokens.length === 0 || tokens.at(-1)!.kind === "op")) {
      tokens.push({ kind: "num", text: number[0], value: Number(number[0]), at });
      i += number[0].length;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*/.exec(source.slice(i));
    if (word) {
      tokens.push({ kind: "word", text: word[0], at });
      i += word[0].length;
      continue;
    }
    const op = /^(==|!=|<=|>=|&&|\|\||[<>!()[\],])/.exec(source.slice(i));
    if (!op) throw new RecipeExpressionError(source, at, "an operator, a name, a number or a string");
    tokens.push({ kind: "op", text: op[0], at });
    i += op[0].length;
  }
  return tokens;
}

/** Parses a condition; throws RecipeExpressionError naming the column when it does not parse. */
export function parseExpression(source: string): Expr {
  if (source.length > MAX_EXPRESSION_LENGTH)
    throw new RecipeExpressionError(source.slice(0, 40), 1, `at most ${MAX_EXPRESSION_LENGTH} characters`);
  const tokens = tokenize(source);
  let position = 0;
  const peek = () => tokens[position];
  const column = () => peek()?.at ?? source.length + 1;
  const accept = (...texts: string[]) => {
    const token = peek();
    if (token && (token.kind === "op" || token.kind === "word") && texts.includes(token.text)) {
      position++;
      return token.text;
    }
    return null;
  };
  const expect = (text: string) => {
    if (!accept(text)) throw new RecipeExpressionError(source, column(), `'${text}'`);
  };
  const or = (depth: number): Expr => {
    if (depth > MAX_DEPTH) throw new RecipeExpressionError(source, column(), `at most ${MAX_DEPTH} levels of nesting`);
    const args = [and(depth)];
    while (accept("or", "||")) args.push(and(depth));
    return args.length === 1 ? args[0]! : { op: "or", args };
  };
  const and = (depth: number): Expr => {
    const args = [unary(depth)];
    while (accept("and", "&&")) args.push(unary(depth));
    return args.length === 1 ? args[0]! : { op: "and", args };
  };
  const unary = (depth: number): Expr => {
    if (accept("not", "!")) return { op: "not", arg: unary(depth + 1) };
    const left = value(depth);
    const op = accept("==", "!=", "<=", ">=", "<", ">", "in");
    return op ? { op: op as "==", left, right: value(depth) } : left;
  };
  const value = (depth: number): Expr => {
    if (depth > MAX_DEPTH) throw new RecipeExpressionError(source, column(), `at most ${MAX_DEPTH} levels of nesting`);
    const token = peek();
    if (!token) throw new RecipeExpressionError(source, column(), "a value");
    if (accept("(")) {
      const inner = or(depth + 1);
      expect(")");
      return inner;
    }
    if (accept("[")) {
      const items: Expr[] = [];
      if (!accept("]")) {
        do items.push(value(depth + 1));
        while (accept(","));
        expect("]");
      }
      return { op: "list", items };
    }
    position++;
    if (token.kind === "num" || token.kind === "str") return { op: "lit", value: token.value! };
    if (token.kind === "word") {
      if (token.text === "true" || token.text === "false") return { op: "lit", value: token.text === "true" };
      if (token.text === "null") return { op: "lit", value: null };
      if (["and", "or", "not", "in"].includes(token.text))
        throw new RecipeExpressionError(source, token.at, `a value, not '${token.text}'`);
      return { op: "var", path: token.text };
    }
    throw new RecipeExpressionError(source, token.at, `a value, not '${token.text}'`);
  };
  if (tokens.length === 0) throw new RecipeExpressionError(source, 1, "a condition");
  const tree = or(0);
  if (position < tokens.length) throw new RecipeExpressionError(source, column(), "the end of the condition");
  return tree;
}

/** The value of an expression over `scope` (the blackboard). Never throws for data: a missing variable is undefined. */
export function evaluateExpression(expr: Expr, scope: unknown): unknown {
  switch (expr.op) {
    case "lit":
      return expr.value;
    case "var":
      try {
        return readPath(scope, expr.path).value;
      } catch {
        return undefined;
      }
    case "list":
      return expr.items.map((item) => evaluateExpression(item, scope));
    case "not":
      return !truthy(evaluateExpression(expr.arg, scope));
    case "and":
      return expr.args.every((arg) => truthy(evaluateExpression(arg, scope)));
    case "or":
      return expr.args.some((arg) => truthy(evaluateExpression(arg, scope)));
    default: {
      const left = evaluateExpression(expr.left, scope);
      const right = evaluateExpression(expr.right, scope);
      if (expr.op === "==") return isDeepStrictEqual(left, right);
      if (expr.op === "!=") return !isDeepStrictEqual(left, right);
      if (expr.op === "in") {
        if (Array.isArray(right)) return right.some((item) => isDeepStrictEqual(item, left));
        return typeof right === "string" && typeof left === "string" && right.includes(left);
      }
      const comparable =
        (typeof left === "number" && typeof right === "number") ||
        (typeof left === "string" && typeof right === "string");
      if (!comparable) return false;
      const a = left as number;
      const b = right as number;
      return expr.op === "<" ? a < b : expr.op === "<=" ? a <= b : expr.op === ">" ? a > b : a >= b;
    }
  }
}

const truthy = (value: unknown): boolean =>
  Array.isArray(value)
    ? value.length > 0
    : value !== undefined && value !== null && value !== false && value !== 0 && value !== "";

/** True when the condition holds over `scope`. */
export const conditionHolds = (expr: Expr, scope: unknown): boolean => truthy(evaluateExpression(expr, scope));
