/**
 * What a gateway tool answers, in MCP's `CallToolResult` shape: the text a
 * person or a model reads, the same as JSON in `structuredContent`, and
 * `isError` for a call that failed (one line saying why: a failure is a
 * result, never a protocol error and never a crash).
 */

import type { TurnOutcome } from "../contracts/turn.ts";
import { singleLine } from "../errors.ts";
import type { RecipeRunResult } from "../eventlog/followRun.ts";

/** A tool call's result (MCP `CallToolResult`). */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** A failed call: one line. */
export function errorResult(message: string): ToolResult {
  return { content: [{ type: "text", text: singleLine(message, 1_000) }], isError: true };
}

/** How a completed turn or run ended, as one line, when it did not end well (Failed, Cancelled), else null. */
export function failureOf(what: string, outcome: TurnOutcome): string | null {
  if (outcome.status === "Failed") return `${what} failed: ${outcome.error.code}: ${outcome.error.message}`;
  if (outcome.status === "Cancelled") return `${what} was cancelled: ${outcome.reason}`;
  return null;
}

/** The command that answers a suspended run (as `conclave run` prints it). */
export function howToAnswer(run: Extract<RecipeRunResult, { status: "suspended" }>): string {
  const role = run.requiredRole ? ` --role ${run.requiredRole}` : "";
  const id = `${run.sessionId}/${run.turnId}`;
  return run.approval
    ? `conclave approve ${id} --user-id <you>${role} [--reason …]   (or conclave deny ${id} …)`
    : `conclave resume ${run.turnId} --session ${run.sessionId} --user-id <you>${role} --input '<json>'`;
}

/**
 * A recipe run's result: its final blackboard when it completed, or, when
 * it waits at a human node or for an approval, where and how to answer it
 * (a result, not an error: the run is alive and waits).
 */
export function runResult(run: RecipeRunResult): ToolResult {
  const ids = { session_id: run.sessionId, turn_id: run.turnId };
  if (run.status === "suspended") {
    const answerWith = howToAnswer(run);
    const waitsFor = run.approval
      ? `approval of the call of tool '${run.approval.tool}' (${run.approval.reason})`
      : `an answer at '${run.node}'`;
    return {
      content: [
        {
          type: "text",
          text: `suspended: run ${run.sessionId}/${run.turnId} waits for ${waitsFor}: ${run.prompt}\nanswer with: ${answerWith}`,
        },
      ],
      structuredContent: {
        status: "suspended",
        ...ids,
        node: run.node,
        prompt: run.prompt,
        ...(run.requiredRole ? { required_role: run.requiredRole } : {}),
        ...(run.expiresAt !== undefined ? { expires_at: new Date(run.expiresAt).toISOString() } : {}),
        ...(run.approval ? { approval: run.approval } : {}),
        answer_with: answerWith,
      },
    };
  }
  const failure = failureOf(`run ${run.sessionId}/${run.turnId}`, run.outcome);
  if (failure) return errorResult(failure);
  const warnings =
    run.outcome.status === "PartialSuccess"
      ? run.outcome.warnings.map((warning) => `warning: ${warning.code}: ${warning.message}\n`).join("")
      : "";
  return {
    content: [{ type: "text", text: `${warnings}${JSON.stringify(run.output, null, 2)}` }],
    structuredContent: { status: "completed", ...ids, outcome: run.outcome, output: run.output },
  };
}
