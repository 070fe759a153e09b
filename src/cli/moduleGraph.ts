import { readFileSync, statSync } from "node:fs";
import { dirname, extname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The module specifiers a JavaScript or TypeScript source names: static `import … from` and
 * `export … from`, side-effect `import "x"`, `import("x")` with a literal, and `require("x")`.
 * Read from the text, without parsing it: a specifier in a comment counts too, which at worst
 * watches one file more.
 */
export function specifiersOf(source: string): string[] {
  const found = new Set<string>();
  const patterns = [
    /\b(?:import|export)\s[^'"`;]*?\bfrom\s*(['"])([^'"\n]+)\1/g,
    /\bimport\s*(['"])([^'"\n]+)\1/g,
    /\b(?:import|require)\s*\(\s*(['"])([^'"\n]+)\1\s*\)/g,
  ];
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) found.add(match[2]!);
  return [...found];
}

/** Extensions tried for a specifier without one, and TypeScript's: `./x.js` naming `./x.ts`. */
const EXTENSIONS = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx", ".json"];
const TS_FOR_JS: Record<string, string[]> = {
  ".js": [".ts", ".tsx"],
  ".mjs": [".mts"],
  ".cjs": [".cts"],
  ".jsx": [".tsx"],
};

const isFile = (path: string): boolean => {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
};

/**
 * The file a relative (`./`, `../`), absolute or `file:` specifier names from `fromFile`, or
 * undefined for a package (`zod`, `node:fs`), a file inside node_modules, or one that is missing.
 */
export function resolveLocal(specifier: string, fromFile: string): string | undefined {
  const bare = specifier.split(/[?#]/)[0]!;
  let path: string;
  if (bare.startsWith("file:")) path = fileURLToPath(bare);
  else if (/^\.{1,2}(\/|$)/.test(bare) || bare.startsWith("/")) path = resolve(dirname(fromFile), bare);
  else return undefined;
  if (path.split(sep).includes("node_modules")) return undefined;
  const extension = extname(path);
  const candidates = [
    path,
    ...(TS_FOR_JS[extension] ?? []).map((other) => path.slice(0, -extension.length) + other),
    ...(extension ? [] : EXTENSIONS.map((other) => path + other)),
    ...(extension ? [] : EXTENSIONS.map((other) => resolve(path, `index${other}`))),
  ];
  return candidates.find(isFile);
}

/** The project a file belongs to: the nearest directory above it with a package.json, else its own. */
export function projectRootOf(file: string): string {
  for (let dir = dirname(resolve(file)); ; dir = dirname(dir)) {
    if (isFile(join(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) return dirname(resolve(file));
  }
}

/**
 * The files of the project that `entries` are and import, directly or not: each entry, then
 * each local file its imports name (see {@link resolveLocal}), followed as far as they go
 * within the entries' projects (see {@link projectRootOf}). Packages, and files outside the
 * projects, are left out: a dev loop watches the user's own code.
 */
export function localModuleGraph(entries: readonly string[]): string[] {
  const seen = new Set<string>();
  const queue = entries.map((entry) => resolve(entry));
  const roots = queue.map(projectRootOf);
  const inProject = (file: string) => roots.some((root) => file === root || file.startsWith(root + sep));
  while (queue.length > 0) {
    const file = queue.shift()!;
    if (seen.has(file) || !isFile(file) || !inProject(file)) continue;
    seen.add(file);
    if (extname(file) === ".json") continue;
    let source: string;
    try {
      source = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const specifier of specifiersOf(source)) {
      const imported = resolveLocal(specifier, file);
      if (imported && !seen.has(imported)) queue.push(imported);
    }
  }
  return [...seen];
}
