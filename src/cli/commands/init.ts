import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { messageOf } from "../../errors.ts";
import { packageVersion } from "../../version.ts";
import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { NPM_PLACEHOLDER_TEST, SCAFFOLD_FILES, SCRIPTS } from "../initScaffold.ts";

const help = `conclave init: write a new project's scaffold: an agent with a tool, a recipe, a test

Usage: conclave init [DIR] [--force]

Writes into DIR (default: the current directory; created when missing):
  agents/echo.js      an agent (defineAgent) and the tool it calls (defineTool),
                      both hosted by conclave dev --agents ./agents/echo.js
  recipes/echo.yaml   a one-step recipe calling the agent
  test/echo.test.js   a test of the agent, run by node --test (no NATS needed)
  README.md           the commands to run
  package.json        "type": "module" (Conclave is ESM), the scripts dev, start,
                      test, send and recipe, and the conclave and zod dependencies.
                      An existing package.json is merged into, not replaced: what
                      it already has is kept, and each change is printed.

  --force   overwrite existing files (and package.json scripts of the same names)

Refuses, writing nothing, when one of those files exists and --force is not given.`;

/** The package.json fields init manages. */
interface Manifest {
  type?: string;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  [field: string]: unknown;
}

/** `conclave` and `zod`: the agent module imports both (zod is Conclave's peer dependency). */
function wantedDependencies(): Record<string, string> {
  return { conclave: `^${packageVersion()}`, zod: "^4.0.0" };
}

/**
 * `existing` (or a new manifest named after the directory) with what the
 * scaffold needs, and a line for each change. Nothing it has is removed.
 */
export function mergeManifest(
  existing: Manifest | undefined,
  name: string,
  force: boolean,
): { manifest: Manifest; changes: string[] } {
  const manifest: Manifest = existing ? { ...existing } : { name, version: "1.0.0", private: true };
  const changes: string[] = [];
  if (manifest.type !== "module") {
    changes.push(
      manifest.type === undefined
        ? 'set "type": "module"'
        : `set "type": "module" (was ${JSON.stringify(manifest.type)})`,
    );
    manifest.type = "module";
  }
  const scripts = { ...(manifest.scripts ?? {}) };
  for (const [script, command] of Object.entries(SCRIPTS)) {
    const had = scripts[script];
    if (had === command) continue;
    if (had === undefined || had === NPM_PLACEHOLDER_TEST || force) {
      scripts[script] = command;
      changes.push(`${had === undefined ? "added" : "replaced"} script ${script}: ${command}`);
    } else changes.push(`kept your script ${script} (${had}); --force replaces it with: ${command}`);
  }
  manifest.scripts = scripts;
  const dependencies = { ...(manifest.dependencies ?? {}) };
  for (const [dependency, range] of Object.entries(wantedDependencies())) {
    if (dependencies[dependency] ?? manifest.devDependencies?.[dependency]) continue;
    dependencies[dependency] = range;
    changes.push(`added dependency ${dependency}@${range}`);
  }
  manifest.dependencies = dependencies;
  return { manifest, changes };
}

/** The manifest at `file`, or undefined when there is none; a usage error when it is not a JSON object. */
function readManifest(file: string): Manifest | undefined {
  if (!existsSync(file)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new UsageError(`${file} is not valid JSON (${messageOf(error).split("\n")[0]}): fix it, then init again`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new UsageError(`${file} is not a JSON object: fix it, then init again`);
  return parsed as Manifest;
}

export default defineCommand({
  help,
  flags: { force: { type: "boolean" } },
  positionals: true,
  async run({ values, positionals }) {
    if (positionals.length > 1) throw new UsageError(`init takes one directory, got ${positionals.length}`);
    const dir = resolve(positionals[0] ?? ".");
    const force = values.force ?? false;
    const shown = relative(process.cwd(), dir) || ".";
    const existing = Object.keys(SCAFFOLD_FILES).filter((path) => existsSync(join(dir, path)));
    if (existing.length > 0 && !force)
      throw new UsageError(
        `${shown} already has ${existing.join(", ")}: init writes nothing over an existing file (--force overwrites)`,
      );
    const manifestFile = join(dir, "package.json");
    const before = readManifest(manifestFile);
    const { manifest, changes } = mergeManifest(before, dir.split(/[\\/]/).pop() || "conclave-project", force);

    mkdirSync(dir, { recursive: true });
    const lines = [`Wrote a Conclave project in ${shown}:`];
    for (const [path, text] of Object.entries(SCAFFOLD_FILES)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
      lines.push(`  ${existing.includes(path) ? "overwrote" : "wrote"}  ${path}`);
    }
    writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
    lines.push(before ? "  merged into package.json:" : "  wrote  package.json:");
    for (const change of changes) lines.push(`    ${change}`);
    if (before && changes.length === 0) lines.push("    nothing to change");
    lines.push("", "Next:");
    if (shown !== ".") lines.push(`  cd ${/^[\w./-]+$/.test(shown) ? shown : `'${shown.replaceAll("'", "'\\''")}'`}`);
    lines.push(
      "  npm install         # conclave and zod",
      "  npm test            # the agent's test (node --test)",
      "  npm run dev         # conclave dev: your agent answers, the viewer, reload on edit (keep it running)",
      "  npm run send        # in another terminal: a turn; its events show the tool call",
      "  npm run recipe      # the one-step recipe: your agent's own answer",
    );
    console.log(lines.join("\n"));
    return 0;
  },
});
