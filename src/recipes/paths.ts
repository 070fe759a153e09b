/**
 * Dotted paths into JSON values (`data.row_count`, `items.0.name`): how
 * recipes name blackboard variables. Own properties only, and never
 * `__proto__`, `constructor` or `prototype`: a path from a document must not
 * reach or change anything but the data.
 */
const FORBIDDEN = new Set(["__proto__", "constructor", "prototype"]);

/** A path's segments; throws on an empty segment or a forbidden one. */
export function pathSegments(path: string): string[] {
  const segments = path.split(".");
  for (const segment of segments) {
    if (segment === "") throw new TypeError(`path '${path}' has an empty segment`);
    if (FORBIDDEN.has(segment)) throw new TypeError(`path '${path}' may not use '${segment}'`);
  }
  return segments;
}

/** The value at `path` in `root`; `found` is false when any segment does not resolve. */
export function readPath(root: unknown, path: string): { found: boolean; value?: unknown } {
  let current: unknown = root;
  for (const segment of pathSegments(path)) {
    if (typeof current !== "object" || current === null || !Object.hasOwn(current, segment)) return { found: false };
    current = (current as Record<string, unknown>)[segment];
  }
  return { found: true, value: current };
}

/** A copy of `root` with `value` at `path` (objects created on the way; arrays copied when indexed). */
export function writePath(root: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const segments = pathSegments(path);
  const write = (node: unknown, index: number): unknown => {
    const segment = segments[index]!;
    const last = index === segments.length - 1;
    if (Array.isArray(node) && /^\d+$/.test(segment)) {
      // An index past the end would make a sparse array that JSON expands without bound.
      if (Number(segment) > node.length)
        throw new RangeError(`path '${path}': index ${segment} is past the end of a list of ${node.length}`);
      const copy = [...node];
      copy[Number(segment)] = last ? value : write(node[Number(segment)], index + 1);
      return copy;
    }
    const base = typeof node === "object" && node !== null && !Array.isArray(node) ? node : {};
    const child = Object.hasOwn(base, segment) ? (base as Record<string, unknown>)[segment] : undefined;
    return { ...base, [segment]: last ? value : write(child, index + 1) };
  };
  return write(root, 0) as Record<string, unknown>;
}
