import { HandlerError } from "../bus/errors.ts";
import { describeIssues } from "../contracts/issues.ts";
import type { ToolCallRequest } from "../contracts/tool.ts";
import { messageOf } from "../errors.ts";
import type { ToolDefinition, ToolRunContext } from "./defineTool.ts";

/** What one call produced where the tool is hosted. */
export interface ToolOutcome {
  result: unknown;
  simulated?: boolean;
}

/**
 * Runs one call of a tool where it is hosted: checks the arguments against
 * its input schema, then runs it live, as a dry run (its `dryRun`, or
 * reported as simulated when it has none and writes), or to undo an earlier
 * call (`rollback`), and checks a live result against its output schema.
 */
export async function runTool(
  tool: ToolDefinition,
  request: ToolCallRequest,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  const name = tool.manifest.name;
  const input = tool.input.safeParse(request.args);
  if (!input.success)
    throw new HandlerError(
      "invalid_request",
      `tool ${name}: arguments rejected: ${describeIssues(input.error, { limit: 5, join: "; " })}`,
    );
  const ctx: ToolRunContext = {
    sessionId: request.session_id,
    turnId: request.turn_id,
    callId: request.call_id,
    idempotencyKey: request.idempotency_key,
    signal,
  };
  try {
    if (request.mode === "rollback") {
      if (!tool.rollback) throw new HandlerError("invalid_request", `tool ${name} cannot roll a call back`);
      return { result: (await tool.rollback({ input: input.data, result: request.undo?.result }, ctx)) ?? null };
    }
    if (request.mode === "dry_run" && tool.manifest.effect === "write") {
      if (!tool.dryRun) return { result: { simulated: true, tool: name, args: input.data }, simulated: true };
      return { result: (await tool.dryRun(input.data, ctx)) ?? null };
    }
    const result = tool.output.safeParse(await tool.run(input.data, ctx));
    if (!result.success)
      throw new HandlerError(
        "tool_failed",
        `tool ${name} answered a result its output schema rejects: ${describeIssues(result.error, { limit: 5, join: "; " })}`,
      );
    return { result: result.data ?? null };
  } catch (error) {
    if (error instanceof HandlerError) throw error;
    throw new HandlerError("tool_failed", `tool ${name} failed: ${messageOf(error)}`);
  }
}
