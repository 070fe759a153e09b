/**
 * The previous release of Conclave, built from git, for the rolling-upgrade test
 * (test/upgrade/rollingUpgrade.test.ts): its processes run beside the current code's on one NATS.
 *
 * The release is the newest `## X (date, tag vX, commit SHA)` heading of CHANGELOG.md below the
 * unreleased one. Its tag is resolved first; a clone without tags (CI) falls back to the commit
 * the heading names; a clone with neither fails with one line saying so. Its sources are
 * extracted with `git archive`, its dependencies are this checkout's node_modules (a symlink) when
 * the two package-lock.json files hold the same packages, else `npm ci`, and it is built with
 * `npm run build`. The result is kept under `<tmpdir>/conclave-release-<commit>`, so a rerun
 * starts at once; removing that directory builds it again.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { CONCLAVE_BIN, type ConclaveProcess, superviseConclave } from "../../src/cli/childProcess.ts";

const ROOT = join(import.meta.dirname, "../..");
/** Written last into a built release: a directory without it is an interrupted build. */
const READY_MARK = ".conclave-release-built";

/** A built previous release. */
export interface PreviousRelease extends ConclaveBuild {
  /** Its full commit. */
  commit: string;
  /** How the commit was found: `tag v0.2.0`, or `no tag v0.2.0 here: the CHANGELOG's commit`. */
  resolvedBy: string;
}

/** The release a CHANGELOG heading names. */
export interface ReleaseHeading {
  version: string;
  tag: string;
  commit: string;
}

/** The newest released heading of a CHANGELOG (`## 0.2.0 (2026-11-29, tag v0.2.0, commit f089474)`). */
export function previousReleaseHeading(changelog: string): ReleaseHeading {
  const match = /^## (\S+) \([^,)]+, tag (\S+), commit ([0-9a-f]{7,40})\)/m.exec(changelog);
  if (!match) throw new Error("CHANGELOG.md names no released version (`## X (date, tag vX, commit SHA)`)");
  return { version: match[1]!, tag: match[2]!, commit: match[3]! };
}

function git(args: string[]): string | null {
  const result = spawnSync("git", args, { cwd: ROOT, encoding: "utf8" });
  return result.status === 0 ? result.stdout.trim() : null;
}

/** The previous release's commit: its tag, else the commit its heading names; throws one line if neither is here. */
export function resolvePreviousRelease(): ReleaseHeading & { resolvedBy: string } {
  const heading = previousReleaseHeading(readFileSync(join(ROOT, "CHANGELOG.md"), "utf8"));
  const tagged = git(["rev-parse", "--verify", "--quiet", `refs/tags/${heading.tag}^{commit}`]);
  if (tagged) return { ...heading, commit: tagged, resolvedBy: `tag ${heading.tag}` };
  const named = git(["rev-parse", "--verify", "--quiet", `${heading.commit}^{commit}`]);
  if (named) return { ...heading, commit: named, resolvedBy: `no tag ${heading.tag} here: the CHANGELOG's commit` };
  throw new Error(
    `previous release ${heading.version}: neither tag ${heading.tag} nor commit ${heading.commit} is in this clone (git fetch --tags, or a clone deep enough to hold it)`,
  );
}

/** A package-lock.json's packages, without the root's own version (a release bumps only that). */
function lockedPackages(lock: string): string {
  const parsed = JSON.parse(lock) as { version?: string; packages?: Record<string, { version?: string }> };
  delete parsed.version;
  delete parsed.packages?.[""]?.version;
  return JSON.stringify(parsed);
}

function run(command: string, args: string[], cwd: string): void {
  const result = spawnSync(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  if (result.status !== 0) {
    const output = `${result.stdout}\n${result.stderr}`.trim().split("\n").slice(-20).join("\n");
    throw new Error(
      `previous release: \`${command} ${args.join(" ")}\` failed (exit ${result.status}) in ${cwd}:\n${output}`,
    );
  }
}

let built: Promise<PreviousRelease> | undefined;

/**
 * The previous release, built once per commit (cached under the temp directory) and once per test
 * process; prints a line at each step of a build.
 */
export function previousRelease(): Promise<PreviousRelease> {
  built ??= Promise.resolve().then(buildPreviousRelease);
  return built;
}

function buildPreviousRelease(): PreviousRelease {
  const release = resolvePreviousRelease();
  const dir = join(tmpdir(), `conclave-release-${release.commit}`);
  const found: PreviousRelease = {
    version: release.version,
    commit: release.commit,
    resolvedBy: release.resolvedBy,
    dir,
    bin: join(dir, "dist/src/cli/main.js"),
  };
  const short = release.commit.slice(0, 7);
  if (existsSync(join(dir, READY_MARK))) {
    console.log(`previous release ${release.version} (${short}, ${release.resolvedBy}): built already in ${dir}`);
    return found;
  }
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1_000).toFixed(1)} s`;
  // Built beside its place and renamed into it: a build interrupted, or racing another test process, leaves no half.
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  try {
    console.log(`previous release ${release.version} (${short}, ${release.resolvedBy}): extracting into ${building}`);
    const archive = execFileSync("git", ["archive", "--format=tar", release.commit], {
      cwd: ROOT,
      maxBuffer: 1 << 30,
    });
    execFileSync("tar", ["-x", "-C", building], { input: archive });
    const sameLock =
      lockedPackages(readFileSync(join(building, "package-lock.json"), "utf8")) ===
      lockedPackages(readFileSync(join(ROOT, "package-lock.json"), "utf8"));
    if (sameLock) {
      console.log(`previous release ${release.version}: same locked packages, linking this checkout's node_modules`);
      symlinkSync(join(ROOT, "node_modules"), join(building, "node_modules"), "dir");
    } else {
      console.log(`previous release ${release.version}: other locked packages, npm ci (${elapsed()})`);
      run("npm", ["ci", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"], building);
    }
    console.log(`previous release ${release.version}: npm run build (${elapsed()})`);
    run("npm", ["run", "build"], building);
    if (!existsSync(join(building, "dist/src/cli/main.js")))
      throw new Error(`previous release ${release.version}: its build wrote no dist/src/cli/main.js`);
    writeFileSync(join(building, READY_MARK), `${release.version} ${release.commit}\n`);
    try {
      rmSync(dir, { recursive: true, force: true });
      renameSync(building, dir);
    } catch (error) {
      // Another test process finished the same build first: use its copy.
      if (!existsSync(join(dir, READY_MARK))) throw error;
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  console.log(`previous release ${release.version}: built in ${elapsed()}, in ${dir}`);
  return found;
}

/** A build of Conclave whose `conclave` command can be started: the previous release, or {@link CURRENT_BUILD}. */
export interface ConclaveBuild {
  /** Its version, as printed: a release's as its CHANGELOG heading names it (`0.2.0`), or `current`. */
  version: string;
  /** The directory it runs in. */
  dir: string;
  /** Its `conclave` command, run with `node` (a release's compiled CLI, dist/src/cli/main.js). */
  bin: string;
}

/** This checkout's code, run from its sources as `spawnConclave` runs it. */
export const CURRENT_BUILD: ConclaveBuild = { version: "current", dir: ROOT, bin: CONCLAVE_BIN };

/** A line a started process logged at warn or error (its log is one JSON object a line on stderr). */
export interface LoggedProblem {
  process: string;
  level: "warn" | "error";
  msg: string;
}

/**
 * Starts `conclave <args>` of `build` as src/cli/childProcess.ts's `spawnConclave` starts the current
 * code's: its own process group, `{ type: "ready" }` over IPC once it serves, SIGTERM then SIGKILL to
 * stop it. Its stderr is passed on line by line, and each warning or error it logs is also given to
 * `onProblem`.
 */
export function spawnBuild(
  build: ConclaveBuild,
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  onProblem: (problem: LoggedProblem) => void = () => {},
  readyTimeoutMs = 20_000,
): ConclaveProcess {
  const child: ChildProcess = spawn(process.execPath, [build.bin, ...args], {
    cwd: build.dir,
    stdio: ["ignore", "inherit", "pipe", "ipc"],
    env,
    detached: true,
  });
  createInterface({ input: child.stderr! }).on("line", (line) => {
    process.stderr.write(`${line}\n`);
    try {
      const { level, msg } = JSON.parse(line) as { level?: unknown; msg?: unknown };
      if (level === "warn" || level === "error") onProblem({ process: name, level, msg: String(msg) });
    } catch {
      // Not a log line (a crash's stack): passed on above.
    }
  });
  return superviseConclave(name, child, readyTimeoutMs);
}
