/**
 * An MCP `tools/call` result as a Conclave tool's result or error.
 */
import { scrubSecrets } from "../../config/secrets.ts";
import { ConclaveError, singleLine } from "../../errors.ts";

/** What a `tools/call` answers, as far as Conclave reads it. */
export interface McpCallResult {
  content?: unknown[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  /** Old servers' form (protocol 2024-10-07): the result itself. */
  toolResult?: unknown;
}

/** The MCP tool answered with `isError`, or the server could not be asked: one line. */
export class McpToolError extends ConclaveError<"tool_failed"> {
  constructor(message: string) {
    // A server may quote the Authorization header it was sent: scrubbed before it becomes an event.
    super("tool_failed", singleLine(scrubSecrets(message), 500));
  }
}

interface TextContent {
  type: "text";
  text: string;
}

const isText = (item: unknown): item is TextContent =>
  typeof item === "object" &&
  item !== null &&
  (item as { type?: unknown }).type === "text" &&
  typeof (item as { text?: unknown }).text === "string";

/**
 * The Conclave result of a call: its `structuredContent` when it has one;
 * else its text, when all its content is text (joined by blank lines);
 * else `{ content }` as the server gave it (images, resources…). A result with
 * `isError` is a McpToolError with its text, on one line.
 */
export function resultOfCall(tool: string, result: McpCallResult): unknown {
  const content = Array.isArray(result.content) ? result.content : [];
  if (result.isError) {
    const text = content
      .filter(isText)
      .map((item) => item.text)
      .join(" ");
    throw new McpToolError(`MCP tool ${tool} answered an error: ${text || "(no message)"}`);
  }
  if (result.structuredContent !== undefined) return result.structuredContent;
  if (content.length === 0 && "toolResult" in result) return result.toolResult ?? null;
  if (content.every(isText)) return content.map((item) => item.text).join("\n\n");
  return { content };
}
