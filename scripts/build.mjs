#!/usr/bin/env node
// `npm run build` (also `prepack`): compiles src/, machines/ and agents/ to dist/ (JavaScript,
// declarations, source maps; tsconfig.build.json), then
// - rewrites the relative `.ts` specifiers left in the declarations to `.js` (TypeScript 5.9's
//   rewriteRelativeImportExtensions rewrites the JavaScript only); same length, so the
//   declaration maps stay exact;
// - copies the files the compiled code reads at run time next to it: dist/src/nats/server.js
//   starts nats-server with `<two levels up>/nats.conf`, which is dist/nats.conf; worker-thread
//   entries in plain JavaScript (src/runtime/runner/heartbeatThread.mjs);
// - checks that no relative `.ts` specifier is left anywhere in dist/.
// `--lenient` (the `prepare` script, run by `npm install` / `npm ci` in a checkout) still
// writes dist/ when the sources have type errors (typecheck and CI report them) and skips
// the build when TypeScript is not installed (`npm ci --omit=dev`), so an install never
// fails on an unfinished edit; the strict build fails on any error.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const dist = join(root, "dist");
const lenient = process.argv.includes("--lenient");
const fail = (message) => {
  console.error(`[build] ${message}`);
  process.exit(1);
};

let tsc;
try {
  tsc = createRequire(join(root, "package.json")).resolve("typescript/bin/tsc");
} catch {
  if (lenient) {
    console.log("[build] TypeScript is not installed (production install?): dist/ not built");
    process.exit(0);
  }
  fail("TypeScript is not installed: run npm install first");
}

rmSync(dist, { recursive: true, force: true });
const compiled = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], {
  cwd: root,
  stdio: "inherit",
});
if (compiled.status !== 0) {
  if (!lenient || !existsSync(join(dist, "src", "cli", "main.js"))) fail(`tsc failed (exit ${compiled.status})`);
  console.warn("[build] type errors above: dist/ written anyway (prepare); `npm run build` fails on them");
}

/** A relative specifier ending in `.ts` in an import, export or `import("…")` type. */
const TS_SPECIFIER = /((?:from|import)\s*\(?\s*)(["'])(\.{1,2}\/[^"'\n]*?)\.ts\2/g;
const filesUnder = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );
const files = filesUnder(dist);
for (const file of files.filter((name) => name.endsWith(".d.ts"))) {
  const text = readFileSync(file, "utf8");
  const rewritten = text.replace(TS_SPECIFIER, "$1$2$3.js$2");
  if (rewritten !== text) writeFileSync(file, rewritten);
}
const left = files
  .filter((name) => name.endsWith(".js") || name.endsWith(".d.ts"))
  .filter((name) => new RegExp(TS_SPECIFIER.source).test(readFileSync(name, "utf8")));
if (left.length > 0) fail(`relative .ts specifiers left in ${left.join(", ")}`);

copyFileSync(join(root, "nats.conf"), join(dist, "nats.conf"));
// Worker-thread entries written in plain JavaScript (they load from the sources and from dist/ alike).
for (const script of ["src/runtime/runner/heartbeatThread.mjs"]) copyFileSync(join(root, script), join(dist, script));
console.log(`[build] dist/: ${files.length} files`);
