/**
 * A JSON-safe copy of anything an actor may hold — cycles, functions, actor
 * refs, Maps, bigints, errors, throwing getters — bounded in depth, breadth,
 * string length and total work, so inspecting an actor never throws and never
 * ships megabytes.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface JsonSafeLimits {
  depth: number;
  /** Items per array, keys per object. */
  breadth: number;
  stringLength: number;
  /** Values copied in all: bounds the work, whatever the shape. */
  nodes: number;
}

export const DEFAULT_LIMITS: JsonSafeLimits = { depth: 6, breadth: 40, stringLength: 400, nodes: 1_500 };

interface Walk {
  limits: JsonSafeLimits;
  seen: WeakSet<object>;
  left: number;
}

export function jsonSafe(value: unknown, limits: JsonSafeLimits = DEFAULT_LIMITS): Json {
  return copy(value, { limits, seen: new WeakSet(), left: limits.nodes }, limits.depth);
}

function copy(value: unknown, walk: Walk, depth: number): Json {
  const { limits, seen } = walk;
  if (walk.left-- <= 0) return "[…]";
  try {
    switch (typeof value) {
      case "string":
        return value.length > limits.stringLength
          ? `${value.slice(0, limits.stringLength)}… (${value.length} chars)`
          : value;
      case "number":
        return Number.isFinite(value) ? value : String(value);
      case "boolean":
        return value;
      case "bigint":
      case "symbol":
        return value.toString();
      case "function":
        return `[function ${value.name || "anonymous"}]`;
      case "undefined":
        return null;
    }
    if (value === null) return null;
    const object = value as object;
    if (seen.has(object)) return "[circular]";
    if (isActorRef(object)) return { $actor: String(object.sessionId) };
    if (object instanceof Error) return { name: object.name, message: copy(object.message, walk, 0) };
    if (object instanceof Date) return Number.isNaN(object.getTime()) ? "Invalid Date" : object.toISOString();
    if (ArrayBuffer.isView(object)) return `[${object.constructor.name} ${object.byteLength} bytes]`;
    if (depth <= 0) return Array.isArray(object) ? `[array of ${object.length}]` : "[object]";
    seen.add(object);
    try {
      if (Array.isArray(object)) return copyList(object.slice(0, limits.breadth), object.length, walk, depth);
      if (object instanceof Set) return copyList(first(object, limits.breadth), object.size, walk, depth);
      const keys = object instanceof Map ? [] : Object.keys(object);
      const entries: [string, unknown][] =
        object instanceof Map
          ? first(object.entries(), limits.breadth).map(([key, item]) => [String(key), item])
          : keys.slice(0, limits.breadth).map((key) => [key, property(object, key)]);
      const count = object instanceof Map ? object.size : keys.length;
      const result: { [key: string]: Json } = {};
      for (const [key, item] of entries) if (item !== undefined) result[key] = copy(item, walk, depth - 1);
      if (count > entries.length) result["…"] = `${count - entries.length} more keys`;
      return result;
    } finally {
      seen.delete(object);
    }
  } catch {
    // A throwing getter or a hostile Proxy: say so rather than fail.
    return "[unreadable]";
  }
}

/** One property, read on its own: a throwing getter spoils only its own value. */
function property(object: object, key: string): unknown {
  try {
    return (object as Record<string, unknown>)[key];
  } catch {
    return "[unreadable]";
  }
}

function copyList(items: unknown[], total: number, walk: Walk, depth: number): Json[] {
  const result = items.map((item) => copy(item, walk, depth - 1));
  if (total > items.length) result.push(`… ${total - items.length} more`);
  return result;
}

function first<T>(iterable: Iterable<T>, n: number): T[] {
  const items: T[] = [];
  for (const item of iterable) {
    if (items.length >= n) break;
    items.push(item);
  }
  return items;
}

const isActorRef = (value: object): value is { sessionId: unknown } =>
  "sessionId" in value && typeof (value as { send?: unknown }).send === "function";
