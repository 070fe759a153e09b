/**
 * CPU slices for `npm run bench -- --scale` (bench/scaleSlices.ts): one cgroup per "machine" with a
 * fixed CPU quota, so k slices at the same quota stand for k small machines on one big one.
 *
 * cgroup v2 (`/sys/fs/cgroup` is cgroup2fs) sets `cpu.max`; cgroup v1 (a tmpfs holding one
 * directory per controller) sets `cpu.cfs_quota_us` under `/sys/fs/cgroup/cpu`. Needs root. A
 * process joins a slice by its pid written to `cgroup.procs` (every thread moves with it), right
 * after it is spawned; its children spawned later are born there.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The scheduler period every slice uses, in µs (the kernel's default). */
export const PERIOD_US = 100_000;

/** A CPU quota: `quotaUs` of CPU time per `periodUs` of wall time (cores = quotaUs ÷ periodUs). */
export interface CpuQuota {
  quotaUs: number;
  periodUs: number;
}

/**
 * The quota of `cores` cores (0.5: half a core) over `periodUs`. A quota below 1 ms per period is
 * refused by the kernel, so it is refused here too, in one line.
 */
export function quotaFor(cores: number, periodUs = PERIOD_US): CpuQuota {
  if (!Number.isFinite(cores) || cores <= 0) throw new Error(`a CPU slice needs more than 0 cores, not ${cores}`);
  const quotaUs = Math.round(cores * periodUs);
  if (quotaUs < 1000) throw new Error(`a CPU slice of ${cores} cores is below the kernel's 1 ms per period`);
  return { quotaUs, periodUs };
}

/** What v2's `cpu.max` takes: `"<quota> <period>"`. */
export const cpuMaxLine = (quota: CpuQuota): string => `${quota.quotaUs} ${quota.periodUs}`;

/** Cores a number of an environment variable names (e.g. BENCH_SCALE_QUOTA=0.5), or `fallback` when unset. */
export function coresFromEnv(name: string, fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a number of cores above 0, not ${text}`);
  return value;
}

/** Which cgroup interface this machine offers, or why none. */
export type CgroupSupport =
  | { kind: "v2"; root: string }
  | { kind: "v1"; root: string }
  | { kind: "none"; reason: string };

/** Probes `/sys/fs/cgroup` (as `stat -fc %T` would) and checks that a slice can be made there. */
export function cgroupSupport(base = "/sys/fs/cgroup"): CgroupSupport {
  if (process.getuid?.() !== 0) return { kind: "none", reason: "not running as root" };
  let fsType: string;
  try {
    fsType = execFileSync("stat", ["-fc", "%T", base], { encoding: "utf8" }).trim();
  } catch {
    return { kind: "none", reason: `${base} is not mounted` };
  }
  const support: CgroupSupport =
    fsType === "cgroup2fs"
      ? { kind: "v2", root: base }
      : existsSync(join(base, "cpu", "cpu.cfs_quota_us"))
        ? { kind: "v1", root: join(base, "cpu") }
        : { kind: "none", reason: `${base} is ${fsType} without a v1 cpu controller` };
  if (support.kind === "none") return support;
  const probe = join(support.root, `conclave-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
  } catch (error) {
    return { kind: "none", reason: `cannot make a cgroup under ${support.root}: ${(error as Error).message}` };
  }
  return support;
}

/** One slice: a cgroup with a CPU quota. */
export interface CpuSlice {
  readonly name: string;
  readonly cores: number;
  /** Moves a process (every thread of it) into the slice. */
  add(pid: number): void;
  /** CPU time the kernel has held the slice's processes back by so far (its quota spent), in ms. */
  throttledMs(): number;
}

/**
 * The slices of one bench run, under one parent cgroup named after this process. `remove()`
 * deletes them (their processes must have exited first, else the kernel refuses: said in one line).
 */
export class CpuSlices {
  readonly #parent: string;
  readonly #made: string[] = [];

  constructor(private readonly support: Exclude<CgroupSupport, { kind: "none" }>) {
    this.#parent = join(support.root, `conclave-bench-${process.pid}`);
  }

  /** Makes slice `name` with a quota of `cores` cores. */
  make(name: string, cores: number): CpuSlice {
    if (!this.#made.includes(this.#parent)) {
      mkdirSync(this.#parent);
      this.#made.push(this.#parent);
      // v2: the parent's children get the cpu controller only once it is enabled for its subtree.
      if (this.support.kind === "v2") writeFileSync(join(this.#parent, "cgroup.subtree_control"), "+cpu");
    }
    const path = join(this.#parent, name);
    mkdirSync(path);
    this.#made.push(path);
    const quota = quotaFor(cores);
    if (this.support.kind === "v2") writeFileSync(join(path, "cpu.max"), cpuMaxLine(quota));
    else {
      writeFileSync(join(path, "cpu.cfs_period_us"), String(quota.periodUs));
      writeFileSync(join(path, "cpu.cfs_quota_us"), String(quota.quotaUs));
    }
    const v2 = this.support.kind === "v2";
    return {
      name,
      cores,
      add: (pid) => writeFileSync(join(path, "cgroup.procs"), String(pid)),
      throttledMs: () => throttledMs(readFileSync(join(path, "cpu.stat"), "utf8"), v2),
    };
  }

  /** Removes every slice, then the parent; a slice that still holds a process stays, and is named. */
  remove(): void {
    const left: string[] = [];
    for (const path of this.#made.splice(0).reverse()) {
      try {
        rmdirSync(path);
      } catch (error) {
        left.push(`${path} (${(error as NodeJS.ErrnoException).code})`);
      }
    }
    if (left.length > 0) throw new Error(`cgroups left behind: ${left.join(", ")}`);
  }
}

/** The throttled time of a `cpu.stat`, in ms: v2 `throttled_usec`, v1 `throttled_time` (ns). */
export function throttledMs(cpuStat: string, v2: boolean): number {
  const field = v2 ? "throttled_usec" : "throttled_time";
  const value = Number(new RegExp(`^${field} (\\d+)$`, "m").exec(cpuStat)?.[1] ?? Number.NaN);
  return v2 ? value / 1000 : value / 1_000_000;
}
