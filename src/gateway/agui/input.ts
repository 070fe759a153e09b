/**
 * What an AG-UI run asks of Conclave: the body of `POST /ag-ui` (a
 * RunAgentInput, checked with @ag-ui/core's own schema), read as one turn of
 * one session. The thread is the session; the run's text is the thread's
 * last user message (the earlier ones Conclave already holds, as the session).
 */
import { contentToText, type RunAgentInput } from "@ag-ui/core";
import { RunAgentInputSchema } from "@ag-ui/core/schemas";
import { SessionId } from "../../contracts/ids.ts";
import { describeIssues } from "../../contracts/issues.ts";
import { MAX_CONVERSE_TEXT } from "../converse.ts";
import { GatewayRequestError } from "../http.ts";

/** One AG-UI run, as the turn it becomes. */
export interface AguiRun {
  /** The body as the schema read it (RUN_STARTED echoes it to the client). */
  input: RunAgentInput;
  /** The Conclave session: the run's `threadId`. */
  sessionId: string;
  runId: string;
  /** What the user says: the text of the last `user` message. */
  text: string;
}

/** The run `body` asks for, or a GatewayRequestError (400) saying in one line what is wrong with it. */
export function parseRunInput(body: unknown): AguiRun {
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success)
    throw new GatewayRequestError(400, `not an AG-UI RunAgentInput: ${describeIssues(parsed.error, { join: "; " })}`);
  const input = parsed.data as RunAgentInput;
  if (!SessionId.safeParse(input.threadId).success)
    throw new GatewayRequestError(
      400,
      `threadId ${JSON.stringify(input.threadId).slice(0, 80)} cannot name a Conclave session: 1 to 64 of A-Z a-z 0-9 _ -`,
    );
  const last = input.messages.findLast((message) => message.role === "user");
  if (!last) throw new GatewayRequestError(400, "messages has no user message: nothing to answer");
  const text = contentToText(last.content).trim();
  if (text === "") throw new GatewayRequestError(400, "the last user message has no text");
  if (text.length > MAX_CONVERSE_TEXT)
    throw new GatewayRequestError(400, `the last user message is longer than ${MAX_CONVERSE_TEXT} characters`);
  return { input, sessionId: input.threadId, runId: input.runId, text };
}
