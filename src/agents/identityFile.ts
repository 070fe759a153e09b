/**
 * An identity file per agent (seed 003's `brewva.identity`): `<dir>/<agent-id>/identity.md`, written
 * by the operator and read by the worker hosting the agent, which puts it first in the agent's
 * `identity_persona` zone. The runtime never writes or generates one; a missing or empty file means
 * no identity. A file is read again when its modification time or size changes, so an edit reaches
 * the agent's next call without a restart.
 */
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** The file name inside an agent's directory. */
export const IDENTITY_FILE = "identity.md";
/** The most characters of an identity file an agent is given (the zone's cap bounds it further). */
export const IDENTITY_TEXT_MAX = 8_000;

/** An agent's identity, as read from its file. */
export interface AgentIdentity {
  /** The file's text (trimmed; at most IDENTITY_TEXT_MAX characters). */
  text: string;
  /** Where it was read from. */
  path: string;
  /** The SHA-256 of the text given (hex): what AGENT_COMPLETED records, never the text. */
  sha256: string;
}

/**
 * An agent id as a directory name: lowercase, only `a-z 0-9 . _ -`, any other run of characters one
 * `-`, none at either end (`Acme Forecaster` → `acme-forecaster`; `acme.forecaster` stays).
 */
export function identitySlug(agentId: string): string {
  return agentId
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/-{2,}/g, "-")
    .replace(/^-+|-+$/g, "");
}

/** The identity files under one directory, each read once until it changes. */
export class IdentityFiles {
  readonly #cache = new Map<string, { stamp: string; identity: AgentIdentity | null }>();

  constructor(
    /** The directory holding one directory per agent. */
    readonly dir: string,
  ) {}

  /** The agent's identity, or null when it has no file (or an empty one, or one that cannot be read). */
  read(agentId: string): AgentIdentity | null {
    const path = join(this.dir, identitySlug(agentId), IDENTITY_FILE);
    let stamp: string;
    try {
      const stat = statSync(path);
      if (!stat.isFile()) return null;
      stamp = `${stat.mtimeMs}:${stat.size}`;
    } catch {
      this.#cache.delete(path);
      return null;
    }
    const cached = this.#cache.get(path);
    if (cached?.stamp === stamp) return cached.identity;
    let identity: AgentIdentity | null = null;
    try {
      const text = readFileSync(path, "utf8").trim().slice(0, IDENTITY_TEXT_MAX);
      if (text !== "") identity = { text, path, sha256: createHash("sha256").update(text).digest("hex") };
    } catch {
      identity = null;
    }
    this.#cache.set(path, { stamp, identity });
    return identity;
  }
}
