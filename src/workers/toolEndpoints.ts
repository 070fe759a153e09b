import { fromPromise } from "xstate";
import { HandlerError } from "../bus/errors.ts";
import { type ServeOptions, serveActor } from "../bus/serveActor.ts";
import type { ServiceGroup } from "../bus/service.ts";
import { subjects } from "../bus/subjects.ts";
import { describeIssues } from "../contracts/issues.ts";
import { type ToolCallReply, ToolCallRequest } from "../contracts/tool.ts";
import { messageOf } from "../errors.ts";
import { inToolSpan } from "../telemetry/genAiSpans.ts";
import { tracingActive } from "../telemetry/tracer.ts";
import type { ToolDefinition, ToolRunContext } from "../tools/defineTool.ts";
import { workerIdentity } from "./agentEndpoints.ts";

/** What one call produced where the tool is hosted. */
interface ToolOutcome {
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

/**
 * Serves one tool on `conclave.tool.<name>`. Several workers may host it:
 * they share the queue group and each call goes to one of them.
 */
export function serveTool(group: ServiceGroup, tool: ToolDefinition, options: ServeOptions = {}): void {
  const worker = workerIdentity();
  serveActor(
    group,
    {
      name: `tool_${tool.manifest.name}`,
      subject: subjects.tool(tool.manifest.name),
      request: ToolCallRequest,
      // Traced, each call is an `execute_tool <tool>` span (GenAI conventions), the child of the request's server span.
      logic: fromPromise<ToolOutcome, ToolCallRequest>(({ input, signal }) =>
        tracingActive()
          ? inToolSpan(tool.manifest.name, input, () => runTool(tool, input, signal))
          : runTool(tool, input, signal),
      ),
      metadata: { tool: tool.manifest.name, risk: tool.manifest.risk, effect: tool.manifest.effect },
      timeoutMs: (request) => request.timeout_ms + 1_000,
      reply: (output, request, { elapsedMs }): ToolCallReply => {
        if (request.tool !== tool.manifest.name)
          throw new HandlerError("invalid_request", `this endpoint serves ${tool.manifest.name}, not ${request.tool}`);
        return {
          tool: tool.manifest.name,
          call_id: request.call_id,
          result: output.result,
          ...(output.simulated ? { simulated: true } : {}),
          elapsed_ms: elapsedMs,
          worker,
        };
      },
    },
    options,
  );
}
