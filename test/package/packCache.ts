/**
 * vitest's global set-up: a directory for the run's one pack of this checkout
 * (see `sharedTarball` in packedProject.ts), removed when the run ends. Packing
 * builds the whole package; doing it once rather than once per test file that
 * installs Conclave saves a build's CPU on a two-core machine.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's pack cache directory (empty until a test file packs). */
    conclavePackCache: string;
  }
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), "conclave-pack-cache-"));
  project.provide("conclavePackCache", dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
