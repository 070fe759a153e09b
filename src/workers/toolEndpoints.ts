import { fromPromise } from "xstate";
import { HandlerError } from "../bus/errors.ts";
import { type ServeOptions, serveActor } from "../bus/serveActor.ts";
import type { ServiceGroup } from "../bus/service.ts";
import { subjects } from "../bus/subjects.ts";
import { type ToolCallReply, ToolCallRequest } from "../contracts/tool.ts";
import { inToolSpan } from "../telemetry/genAiSpans.ts";
import { tracingActive } from "../telemetry/tracer.ts";
import type { ToolDefinition } from "../tools/defineTool.ts";
import { runTool, type ToolOutcome } from "../tools/runTool.ts";
import { workerIdentity } from "./agentEndpoints.ts";

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
