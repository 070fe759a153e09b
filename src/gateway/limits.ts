/**
 * The gateway's bounds, read once from the settings (src/config/schema/gateway.ts),
 * and the checks that keep hostile input from costing more than a one-line
 * refusal: JSON nested too deep is refused before it is parsed (a parser or
 * schema walking it would overflow the stack).
 */
import { setting } from "../config/load.ts";

/** What `conclave serve` lets callers make it hold (docs/gateway.md#limits). */
export interface GatewayLimits {
  /** A2A tasks kept, their age and their total size as JSON. */
  maxTasks: number;
  taskTtlMs: number;
  taskBytes: number;
  /** MCP sessions open, per caller, and how long an idle (or never-used) one lasts. */
  maxSessions: number;
  sessionsPerCaller: number;
  sessionIdleMs: number;
  unusedSessionIdleMs: number;
  /** Longest a request's headers and body may take to arrive. */
  bodyTimeoutMs: number;
  /** HTTP connections open at once. */
  maxConnections: number;
}

/** The limits the settings give (their defaults when unset); a ConfigError (exit 2) for a bad value. */
export function gatewayLimits(env: NodeJS.ProcessEnv = process.env): GatewayLimits {
  return {
    maxTasks: setting(env, "CONCLAVE_GATEWAY_MAX_TASKS"),
    taskTtlMs: setting(env, "CONCLAVE_GATEWAY_TASK_TTL_MS"),
    taskBytes: setting(env, "CONCLAVE_GATEWAY_TASK_BYTES"),
    maxSessions: setting(env, "CONCLAVE_GATEWAY_MAX_SESSIONS"),
    sessionsPerCaller: setting(env, "CONCLAVE_GATEWAY_SESSIONS_PER_CALLER"),
    sessionIdleMs: setting(env, "CONCLAVE_GATEWAY_SESSION_IDLE_MS"),
    unusedSessionIdleMs: setting(env, "CONCLAVE_GATEWAY_UNUSED_SESSION_IDLE_MS"),
    bodyTimeoutMs: setting(env, "CONCLAVE_GATEWAY_BODY_TIMEOUT_MS"),
    maxConnections: setting(env, "CONCLAVE_GATEWAY_MAX_CONNECTIONS"),
  };
}

/** Deepest nesting of arrays and objects a request body may have (MCP, A2A and AG-UI bodies need a handful). */
export const MAX_JSON_DEPTH = 64;

/** Longest MCP `progressToken` taken, in characters: it is echoed in every progress notification. */
export const MAX_PROGRESS_TOKEN_LENGTH = 256;

/**
 * How deep `text`'s JSON nests, counted without parsing it: brackets outside
 * strings. Stops counting past `limit` (the answer is then `limit + 1`).
 */
export function jsonDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}
