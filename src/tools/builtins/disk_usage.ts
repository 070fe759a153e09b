import { statfs } from "node:fs/promises";
import { resolve } from "node:path";
import { z } from "zod";
import { defineTool } from "../defineTool.ts";

/** What `disk_usage` answers: sizes in bytes, as `df` counts them. */
const DiskUsage = z.object({
  path: z.string(),
  total_bytes: z.number().int().min(0),
  free_bytes: z.number().int().min(0),
  used_bytes: z.number().int().min(0),
  used_percent: z.number().min(0).max(100),
});

/** Total, free and used bytes of the file system holding a path (read only; safe). */
export const diskUsage = defineTool({
  name: "disk_usage",
  description:
    "Total, free and used bytes, and the percentage used, of the file system holding a path (default '/'). Reads only.",
  risk: "safe",
  effect: "read",
  input: z.object({
    path: z.string().min(1).max(4_096).default("/").describe("Any path on the file system to measure"),
  }),
  output: DiskUsage,
  run: async ({ path }) => {
    const absolute = resolve(path);
    const stats = await statfs(absolute).catch((error: NodeJS.ErrnoException) => {
      // The model sees this message: one line naming the path, not a stack or an errno dump.
      if (error.code === "ENOENT" || error.code === "ENOTDIR") throw new Error(`no such path: ${absolute}`);
      throw new Error(`cannot read the file system of ${absolute}: ${error.code ?? error.message}`);
    });
    const total = stats.blocks * stats.bsize;
    // Free is what an unprivileged writer can still use (bavail), not bfree, which
    // counts the blocks reserved for root; used is what is taken. Like df, the
    // reserve is in neither, so used + free may fall short of total.
    const free = stats.bavail * stats.bsize;
    const used = (stats.blocks - stats.bfree) * stats.bsize;
    const usable = used + free;
    return {
      path: absolute,
      total_bytes: total,
      free_bytes: free,
      used_bytes: used,
      used_percent: usable === 0 ? 0 : Math.round((used / usable) * 10_000) / 100,
    };
  },
});
