/**
 * A follow-up message in an input-required task: the answer to the run it
 * waits for, given through the client API (`resume` at a human node,
 * `approve`/`deny` for an approval), the run then followed until it
 * completes or waits again.
 */
import type { Message } from "@a2a-js/sdk";
import type { ConclaveClient } from "../../client/client.ts";
import { ConclaveError } from "../../errors.ts";
import type { RecipeRunResult } from "../../eventlog/followRun.ts";
import { answeringRole, type Principal } from "../principals.ts";
import type { ProgressReporter } from "../progress.ts";
import { runResult, type ToolResult } from "../results.ts";
import type { WaitingRun } from "./outcome.ts";
import { dataOf, metadataString, textOf } from "./parts.ts";

/** An answer that cannot be given as sent (the task still waits). */
export class A2aAnswerError extends ConclaveError<"invalid_request"> {
  constructor(message: string) {
    super("invalid_request", message);
  }
}

/** Who answers when the message does not say (`metadata.user_id`). */
const DEFAULT_USER = "a2a-client";

/** The answer at a human node: the data part, else the text read as JSON, else the text itself. */
function answerOf(message: Message): unknown {
  const data = dataOf(message);
  if (data) return data.value;
  const text = textOf(message);
  if (text === "") throw new A2aAnswerError("the answer is empty: send a data part (or a text part)");
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Answers `waiting` with `message`; throws (A2aAnswerError, or the client's
 * forbidden/conflict errors) when the answer cannot be given, the run still
 * waiting. The run's result is a tool result, as the recipe tools give.
 */
export async function answerWaitingRun(
  client: ConclaveClient,
  waiting: WaitingRun,
  message: Message,
  context: { progress: ProgressReporter; timeoutMs: number; principal: Principal },
): Promise<ToolResult> {
  const userId = metadataString("user_id", message.metadata) ?? DEFAULT_USER;
  // The role comes from the principals file; a request may only pick one of the roles given its principal.
  const role = answeringRole(context.principal, metadataString("role", message.metadata) ?? undefined);
  const follow = { onEvent: context.progress.event, timeoutMs: context.timeoutMs };
  let run: RecipeRunResult;
  if (waiting.approval) {
    const answer = dataOf(message)?.value as { approved?: unknown; reason?: unknown } | undefined;
    if (typeof answer?.approved !== "boolean")
      throw new A2aAnswerError('answer an approval with a data part {"approved": true} or {"approved": false}');
    const options = {
      userId,
      ...(role ? { role } : {}),
      ...(typeof answer.reason === "string" ? { reason: answer.reason } : {}),
      ...follow,
    };
    const id = `${waiting.sessionId}/${waiting.turnId}`;
    run = answer.approved ? await client.approve(id, options) : await client.deny(id, options);
  } else {
    run = await client.resume(waiting.sessionId, waiting.turnId, {
      input: answerOf(message),
      userId,
      ...(role ? { role } : {}),
      ...follow,
    });
  }
  return runResult(run);
}
