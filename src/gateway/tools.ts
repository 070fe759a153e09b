/**
 * The gateway's tools, whatever protocol calls them: `converse` (one turn
 * of a session) and one per recipe (recipeTools.ts). A tool is a name, a
 * description, a JSON Schema of its arguments and a call that never throws:
 * every failure is an `isError` result of one line.
 */
import type { ConclaveClient } from "../client/client.ts";
import { codeOf, messageOf } from "../errors.ts";
import type { Principal } from "./principals.ts";
import type { ProgressReporter } from "./progress.ts";
import { errorResult, type ToolResult } from "./results.ts";

/** What a call is given besides its arguments. */
export interface CallContext {
  /** Aborted when the caller cancels the call: the turn or run is cancelled (it ends Cancelled). */
  signal: AbortSignal;
  /** Where the call's events go as progress. */
  progress: ProgressReporter;
  /** Who calls: the sessions it names are its own (principals.ts). */
  principal: Principal;
  /**
   * Told the session the call works in (as the principal's client names it), before anything is
   * submitted there: A2A keeps the task with it, to drop the task when the session is erased.
   */
  onSession?: (sessionId: string) => void;
}

/** One tool the gateway offers. */
export interface GatewayTool {
  /** Its MCP name: A-Z a-z 0-9 _ -, up to 64 characters. */
  name: string;
  description: string;
  /** A JSON Schema of type object. */
  inputSchema: { type: "object"; [key: string]: unknown };
  /** A JSON Schema of type object for its results' `structuredContent` (failures carry none). */
  outputSchema?: { type: "object"; [key: string]: unknown };
  /** Runs it: a result, never a throw (failures are `isError` results). */
  call(client: ConclaveClient, args: Record<string, unknown>, context: CallContext): Promise<ToolResult>;
}

/** Patience for one call, in ms: a turn or run not done (or suspended) by then is an error result. */
export interface ToolLimits {
  timeoutMs: number;
}

/** Calls `tool`, turning anything it throws into an error result of one line. */
export async function callTool(
  tool: GatewayTool,
  client: ConclaveClient,
  args: Record<string, unknown>,
  context: CallContext,
): Promise<ToolResult> {
  try {
    return await tool.call(client, args, context);
  } catch (error) {
    return errorResult(`${tool.name}: ${describeCallFailure(error)}`);
  } finally {
    context.progress.flush();
  }
}

/** A failure of a call, for the caller: what went wrong and, where it helps, what to do. */
export function describeCallFailure(error: unknown): string {
  if (codeOf(error) === "no_responders") return "no runner answers: start one (conclave up, or conclave runner)";
  return messageOf(error);
}
