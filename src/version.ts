import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

let cached: string | undefined;

/**
 * Conclave's version, from the nearest package.json above this module
 * (src/ in the repository, dist/src/ once built), read once. It is what
 * `conclave --version` prints and what the NATS services and the MCP
 * client and gateway announce.
 */
export function packageVersion(): string {
  if (cached !== undefined) return cached;
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      cached = (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version;
      return cached;
    }
    if (dirname(dir) === dir) throw new Error(`no package.json above ${import.meta.dirname}`);
  }
}
