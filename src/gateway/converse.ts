/**
 * The `converse` tool: one user turn in a session (a new session when none is
 * given), its events sent as progress, its reply as the result.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { SessionId } from "../contracts/ids.ts";
import { describeIssues } from "../contracts/issues.ts";
import { MAX_TURN_TEXT } from "../contracts/turn.ts";
import { sessionOf } from "./principals.ts";
import { errorResult, failureOf } from "./results.ts";
import type { GatewayTool, ToolLimits } from "./tools.ts";

/**
 * Longest message `converse` (and A2A, AG-UI) takes, in characters: the runner's own
 * limit on a turn's text, so what the tool advertises is what a turn accepts.
 */
export const MAX_CONVERSE_TEXT = MAX_TURN_TEXT;

/** What a `converse` result's `structuredContent` holds (its `outputSchema`). */
const CONVERSE_OUTPUT_SCHEMA: NonNullable<GatewayTool["outputSchema"]> = {
  type: "object",
  properties: {
    session_id: { type: "string", description: "The conversation: pass it back to go on." },
    turn_id: { type: "integer", minimum: 1 },
    reply: { type: "string", description: "The reply; empty when the council chose silence." },
    outcome: {
      type: "object",
      properties: { status: { type: "string", enum: ["Complete", "PartialSuccess"] } },
      required: ["status"],
    },
    warnings: { type: "array", items: { type: "object" } },
  },
  required: ["session_id", "turn_id", "reply", "outcome"],
};

const ConverseArgs = z.strictObject({
  session_id: SessionId.optional(),
  text: z.string().trim().min(1, "text must not be empty").max(MAX_CONVERSE_TEXT),
});

/** A new session's id, when the caller gives none. */
export const newSessionId = (prefix = "mcp") => `${prefix}-${randomBytes(6).toString("hex")}`;

/** The `converse` tool. */
export function converseTool(limits: ToolLimits): GatewayTool {
  return {
    name: "converse",
    description:
      "Say something to Conclave: one turn of a conversation (session). Give session_id to go on with a " +
      "conversation, or leave it out to start one (its id comes back in the result). Returns the reply.",
    inputSchema: {
      type: "object",
      properties: {
        session_id: {
          type: "string",
          pattern: "^[A-Za-z0-9_-]{1,64}$",
          description: "The conversation to continue; a new one when absent.",
        },
        text: { type: "string", minLength: 1, maxLength: MAX_CONVERSE_TEXT, description: "What the user says." },
      },
      required: ["text"],
      additionalProperties: false,
    },
    outputSchema: CONVERSE_OUTPUT_SCHEMA,
    async call(client, args, { signal, progress, principal, onSession }) {
      const parsed = ConverseArgs.safeParse(args);
      if (!parsed.success) return errorResult(`converse: ${describeIssues(parsed.error, { join: "; " })}`);
      // The caller's own id; the session is its own (a named client's namespace before it).
      const sessionId = parsed.data.session_id ?? newSessionId();
      const session = sessionOf(principal, sessionId);
      onSession?.(session);
      const turn = client.submit(session, parsed.data.text, {
        signal,
        timeoutMs: limits.timeoutMs,
      });
      for await (const event of turn) progress.event(event);
      const result = await turn.result;
      const failure = failureOf(`turn ${sessionId}/${result.turnId}`, result.outcome);
      if (failure) return errorResult(failure);
      const warnings = result.outcome.status === "PartialSuccess" ? result.outcome.warnings : [];
      return {
        content: [
          { type: "text", text: result.response === "" ? "(no reply: the council chose silence)" : result.response },
        ],
        structuredContent: {
          session_id: sessionId,
          turn_id: result.turnId,
          reply: result.response,
          outcome: result.outcome,
          ...(warnings.length > 0 ? { warnings } : {}),
        },
      };
    },
  };
}
