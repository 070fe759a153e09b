import { readdirSync, readFileSync } from "node:fs";

/** Resident memory of a process from /proc (kB): now, and its peak (VmHWM). */
export interface ProcessMemory {
  rssKb: number;
  peakRssKb: number;
}

export function processMemory(pid: number): ProcessMemory | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
    return { rssKb: field("VmRSS"), peakRssKb: field("VmHWM") };
  } catch {
    return null;
  }
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on Linux). */
const USER_HZ = 100;

/** CPU time (user + system) a process has used so far, in ms (10 ms resolution). */
export function cpuTimeMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start at state (field 3).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
  } catch {
    return Number.NaN;
  }
}

/** CPU time all processes of the machine have used so far (every core; /proc/stat), in ms. */
export function machineBusyMs(): number {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    return (((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * 1000) / USER_HZ;
  } catch {
    return Number.NaN;
  }
}

/** The numeric fields of /proc/<pid>/stat after the command name: [state, ppid, …] (field 3 onwards). */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/**
 * CPU time (user + system) of a process and every descendant, in ms,
 * including children that have exited (their time moves into their parent's
 * cutime/cstime once reaped). For a server that forks a process per
 * connection, e.g. PostgreSQL's postmaster and its backends. Reads every
 * /proc/<pid>/stat once: call it around a measurement, not in a loop.
 */
export function processTreeCpuMs(rootPid: number): number {
  const children = new Map<number, number[]>();
  const own = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (!fields) continue;
    const pid = Number(entry);
    const parent = Number(fields[1]);
    // utime, stime, cutime, cstime: fields 14–17 of stat, 11–14 here.
    own.set(
      pid,
      [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0),
    );
    children.set(parent, [...(children.get(parent) ?? []), pid]);
  }
  if (!own.has(rootPid)) return Number.NaN;
  let ticks = 0;
  const pending = [rootPid];
  while (pending.length > 0) {
    const pid = pending.pop()!;
    ticks += own.get(pid) ?? 0;
    pending.push(...(children.get(pid) ?? []));
  }
  return (ticks * 1000) / USER_HZ;
}
