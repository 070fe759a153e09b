/**
 * Conclave as a user gets it: this checkout packed with `npm pack` and installed into an
 * empty project (`npm init -y && npm install <tarball>`), so a test runs the compiled
 * package with plain Node, never the sources.
 *
 * The pack runs in a copy of the package's inputs (the `files` of package.json and what
 * the build reads), with node_modules linked to this checkout's: `prepack` rebuilds dist/
 * there, so a test never rewrites or races the checkout's own dist/. One pack serves the
 * whole run (see `sharedTarball`); each file installs it into a project of its own. The
 * install uses the npm cache (`--prefer-offline`), which already holds every dependency.
 *
 * EXTENSION POINT: a test that runs Conclave the way a user does (its own agent file, a
 * full turn through `conclave up` / `conclave send`) calls `usePackedProject()` once at the
 * top of its file, writes its files with `project().write(...)` and runs them with
 * `project().run(...)`. Pack and install take tens of seconds: one per file, in beforeAll.
 */
import { type ChildProcessByStdio, execFile, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  watch,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { afterAll, beforeAll, inject } from "vitest";
import { messageOf } from "../../src/errors.ts";

/** This checkout. */
export const REPO = resolve(import.meta.dirname, "..", "..");

/** What the build reads besides the package's `files`: tsconfig.build.json compiles src/, machines/, agents/, tools/. */
const BUILD_INPUTS = [
  "package.json",
  "tsconfig.json",
  "tsconfig.build.json",
  "scripts",
  "src",
  "machines",
  "agents",
  "tools",
];

/** Enough for a build, a pack and an install on a busy two-core machine. */
export const PACK_TIMEOUT_MS = 240_000;

/** A command's output. */
export interface CommandOutput {
  stdout: string;
  stderr: string;
}

/** An empty npm project with the packed Conclave installed in it. */
export interface PackedProject {
  /** The project directory (package.json; node_modules/conclave from the tarball). */
  dir: string;
  /** The tarball `npm pack` wrote. */
  tarball: string;
  /** The version in the packed package.json. */
  version: string;
  /** What `npm install <tarball>` printed, stdout then stderr. */
  installOutput: string;
  /** Writes a file at a path relative to the project, creating its directories. */
  write(path: string, text: string): string;
  /** Runs `command` in the project directory; rejects, with its output, when it fails. */
  run(
    command: string,
    args: string[],
    options?: { env?: NodeJS.ProcessEnv; timeoutMs?: number },
  ): Promise<CommandOutput>;
  /**
   * Starts a long-running `command` in the project directory (`node_modules/.bin/conclave dev`, say:
   * not through npx, so a signal reaches it), its output piped. The caller stops it (SIGINT, and waits:
   * it stops what it started); one still running when the project is removed is sent SIGINT then.
   */
  start(
    command: string,
    args: string[],
    options?: { env?: NodeJS.ProcessEnv },
  ): ChildProcessByStdio<null, Readable, Readable>;
  /** Removes the project, the tarball and the packed copy. */
  remove(): void;
}

/** The environment without the `npm_*` variables an enclosing `npm test` sets, which a nested npm would read as its own configuration. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith("npm_"))),
    ...extra,
  };
}

function command(
  cwd: string,
  file: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<CommandOutput> {
  return new Promise((done, fail) => {
    execFile(
      file,
      args,
      { cwd, env: cleanEnv(options.env), timeout: options.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error)
          fail(new Error(`${file} ${args.join(" ")} failed in ${cwd}: ${error.message}\n${stdout}\n${stderr}`));
        else done({ stdout, stderr });
      },
    );
  });
}

/** Packs this checkout into `dir` (a copy of its inputs, then `npm pack`); resolves to the tarball. */
async function packInto(dir: string): Promise<{ tarball: string; version: string }> {
  const source = join(dir, "source");
  const pack = join(dir, "pack");
  for (const path of [source, pack]) mkdirSync(path);
  const manifest = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as {
    version: string;
    files: string[];
  };
  for (const entry of new Set([...BUILD_INPUTS, ...manifest.files, "README.md", "LICENSE"])) {
    if (existsSync(join(REPO, entry))) cpSync(join(REPO, entry), join(source, entry), { recursive: true });
  }
  symlinkSync(join(REPO, "node_modules"), join(source, "node_modules"), "dir");
  await command(source, "npm", ["pack", "--pack-destination", pack]);
  const tarballs = readdirSync(pack).filter((name) => name.endsWith(".tgz"));
  if (tarballs.length !== 1) throw new Error(`npm pack wrote ${tarballs.length} tarballs in ${pack}`);
  // The copy was only for the build: the tarball is what projects install.
  rmSync(source, { recursive: true, force: true });
  return { tarball: join(pack, tarballs[0]!), version: manifest.version };
}

/** Resolves once `file` exists in `dir`, watching the directory rather than polling it. */
function fileAppears(dir: string, file: string, timeoutMs: number): Promise<void> {
  return new Promise((done, fail) => {
    const watcher = watch(dir);
    const timer = setTimeout(() => {
      watcher.close();
      fail(new Error(`no ${file} in ${dir} after ${timeoutMs} ms: the test file packing Conclave did not finish`));
    }, timeoutMs);
    const check = () => {
      if (!existsSync(join(dir, file))) return;
      clearTimeout(timer);
      watcher.close();
      done();
    };
    watcher.on("change", check);
    check();
  });
}

/**
 * The tarball of this checkout, packed once per `vitest` run: the first test file to ask
 * packs it into the run's pack cache (vitest's global set-up, test/package/packCache.ts),
 * the others wait for it. Without that set-up (one file run on its own) the file packs
 * into `fallback`.
 */
async function sharedTarball(fallback: string): Promise<{ tarball: string; version: string }> {
  const cache = inject("conclavePackCache");
  if (!cache) return packInto(fallback);
  const result = join(cache, "packed.json");
  try {
    mkdirSync(join(cache, "packing")); // atomic: exactly one file wins and packs
  } catch {
    await fileAppears(cache, "packed.json", PACK_TIMEOUT_MS);
    const packed = JSON.parse(readFileSync(result, "utf8")) as { tarball: string; version: string } | { error: string };
    if ("error" in packed) throw new Error(`packing Conclave failed in another test file: ${packed.error}`);
    return packed;
  }
  let packed: { tarball: string; version: string } | { error: string };
  try {
    packed = await packInto(cache);
  } catch (error) {
    packed = { error: messageOf(error).split("\n")[0]! };
  }
  writeFileSync(`${result}.tmp`, JSON.stringify(packed));
  renameSync(`${result}.tmp`, result); // the waiting files see a whole file or none
  if ("error" in packed) throw new Error(`packing Conclave failed: ${packed.error}`);
  return packed;
}

/** Installs this checkout's tarball (packed once per run) into a new empty project. */
export async function packProject(): Promise<PackedProject> {
  const root = mkdtempSync(join(tmpdir(), "conclave-packed-"));
  try {
    const dir = join(root, "project");
    mkdirSync(dir);
    const { tarball, version } = await sharedTarball(root);
    await command(dir, "npm", ["init", "-y"]);
    const installed = await command(dir, "npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball]);
    const started: ChildProcessByStdio<null, Readable, Readable>[] = [];
    return {
      dir,
      tarball,
      version,
      installOutput: `${installed.stdout}\n${installed.stderr}`,
      write(path, text) {
        const file = join(dir, path);
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, text);
        return file;
      },
      run: (file, args, options) => command(dir, file, args, options),
      start(file, args, options = {}) {
        const child = spawn(file, args, { cwd: dir, env: cleanEnv(options.env), stdio: ["ignore", "pipe", "pipe"] });
        started.push(child);
        return child;
      },
      remove: () => {
        for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGINT");
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

/** Packs and installs once for the calling test file (beforeAll), removes it after (afterAll). */
export function usePackedProject(): () => PackedProject {
  let project: PackedProject | undefined;
  beforeAll(async () => {
    project = await packProject();
  }, PACK_TIMEOUT_MS);
  afterAll(() => project?.remove());
  return () => {
    if (!project) throw new Error("the packed project is not installed yet: use it inside a test");
    return project;
  };
}
