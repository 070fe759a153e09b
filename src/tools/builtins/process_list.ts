import { readdir, readFile } from "node:fs/promises";
import { z } from "zod";
import { defineTool } from "../defineTool.ts";

/** One process as `process_list` reports it. */
const ProcessEntry = z.object({
  pid: z.number().int().positive(),
  name: z.string(),
  rss_kb: z.number().int().min(0),
});
type ProcessEntry = z.infer<typeof ProcessEntry>;

/** Processes read at once: enough to be quick, few enough not to run out of file descriptors. */
const BATCH = 64;

/** A read failing because the process exited meanwhile (its /proc directory is gone). */
const vanished = (error: unknown): boolean => {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ESRCH";
};

/**
 * Reads one process: its name from `/proc/<pid>/stat`, its resident memory from
 * `/proc/<pid>/status` (`VmRSS`, absent for kernel threads: 0). Undefined when
 * it exited while being read.
 */
async function readProcess(pid: number): Promise<ProcessEntry | undefined> {
  try {
    const [stat, status] = await Promise.all([
      readFile(`/proc/${pid}/stat`, "utf8"),
      readFile(`/proc/${pid}/status`, "utf8"),
    ]);
    // The name sits between the first '(' and the LAST ')': it may itself hold spaces and parentheses.
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const rss = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
    return { pid, name, rss_kb: rss ? Number(rss[1]) : 0 };
  } catch (error) {
    if (vanished(error)) return undefined;
    throw error;
  }
}

/** The processes using the most resident memory, read from Linux's /proc without running any command (safe). */
export const processList = defineTool({
  name: "process_list",
  description:
    "The processes using the most resident memory (name, pid, rss_kb), largest first, at most `limit` (default 10). Linux only. Reads only.",
  risk: "safe",
  effect: "read",
  input: z.object({ limit: z.number().int().min(1).max(50).default(10).describe("How many processes to list") }),
  output: z.object({ processes: z.array(ProcessEntry) }),
  run: async ({ limit }, { signal }) => {
    const entries = await readdir("/proc").catch(() => {
      throw new Error("process_list reads /proc, which this system does not have (Linux only)");
    });
    const pids = entries.filter((entry) => /^\d+$/.test(entry)).map(Number);
    const processes: ProcessEntry[] = [];
    for (let start = 0; start < pids.length; start += BATCH) {
      // A turn past its deadline does not want the rest of a long scan.
      signal.throwIfAborted();
      const batch = await Promise.all(pids.slice(start, start + BATCH).map(readProcess));
      for (const entry of batch) if (entry) processes.push(entry);
    }
    processes.sort((a, b) => b.rss_kb - a.rss_kb || a.pid - b.pid);
    return { processes: processes.slice(0, limit) };
  },
});
