import type { z } from "zod";
import type {
  ChatMessage,
  ChatModel,
  CompleteRequest,
  CompleteResult,
  ModelToolCall,
  StreamRequest,
  StructuredRequest,
  StructuredResult,
  TextStream,
} from "../contracts/model.ts";
import { noUsage } from "../contracts/usage.ts";
import { PROVIDER_OFFLINE, setUsage } from "../telemetry/attributes.ts";
import { inChatSpan } from "../telemetry/genAiSpans.ts";
import { tracingActive } from "../telemetry/tracer.ts";
import { LlmError } from "./errors.ts";
import { LazyTextStream } from "./textStream.ts";

/** How much of the user's text, or of a tool result, an offline reply quotes. */
const QUOTE_CHARS = 200;

/**
 * The offline mode of tool calling: a ChatModel that needs no server and always answers the same
 * conversation the same way, so tool-calling code can run (and be tested) without a model.
 *
 * `complete` reads the last `user` message:
 * - Each offered tool whose name appears in it as a word becomes one call, in order of first
 *   appearance, with ids `call_1`, `call_2`, …. Its arguments are the JSON object written right
 *   after the name (`disk_usage {"path": "/tmp"}`), or `{}` when none is (or it is not valid JSON).
 * - Once `tool` messages follow that user message (the round after the calls), it answers
 *   `Done: ` and one line per result, `<tool name>: <result JSON>` (each result cut to 200 characters).
 * - When no offered tool is named, it answers `(offline) ` and the user text (cut to 200 characters).
 *
 * Usage is always zero. It only does tool calling: `structured` and `stream` fail with LlmError
 * `bad_request`. An aborted signal fails `complete` with LlmError `aborted`.
 */
export class OfflineToolModel implements ChatModel {
  readonly model = "offline";

  complete(request: CompleteRequest): Promise<CompleteResult> {
    if (!tracingActive()) return this.#complete(request);
    return inChatSpan(this.model, PROVIDER_OFFLINE, request, async (span) => {
      const result = await this.#complete(request);
      setUsage(span, result.usage);
      return result;
    });
  }

  async #complete(request: CompleteRequest): Promise<CompleteResult> {
    if (request.signal?.aborted) throw new LlmError("aborted", request.caller, "the caller aborted");
    const lastUser = request.messages.findLastIndex((message) => message.role === "user");
    const user = lastUser >= 0 ? (request.messages[lastUser]?.content ?? "") : "";
    const after = request.messages.slice(lastUser + 1);
    if (after.some((message) => message.role === "tool")) {
      return { content: `Done: ${resultLines(after).join("\n")}`, toolCalls: [], usage: noUsage() };
    }
    const offered = request.tools.map((tool) => tool.name);
    const toolCalls = namedCalls(user, offered);
    if (toolCalls.length > 0) return { content: null, toolCalls, usage: noUsage() };
    return { content: `(offline) ${user.slice(0, QUOTE_CHARS)}`, toolCalls: [], usage: noUsage() };
  }

  /** Not offered offline: rejects with `bad_request` (agents answer on their own in the offline mode). */
  async structured<S extends z.ZodType>(request: StructuredRequest<S>): Promise<StructuredResult<z.infer<S>>> {
    throw onlyToolCalling(request.caller);
  }

  /** Not offered offline: the stream fails with `bad_request` when read. */
  stream(request: StreamRequest): TextStream {
    // Through iteration, where a TextStream's errors come.
    // biome-ignore lint/correctness/useYield: a stream that fails before its first part
    return new LazyTextStream(async function* () {
      throw onlyToolCalling(request.caller);
    });
  }
}

function onlyToolCalling(caller: string): LlmError {
  return new LlmError("bad_request", caller, "the offline model only does tool calling (complete)");
}

/** `<tool name>: <result>` for each tool message, the name found through the assistant's calls. */
function resultLines(messages: ChatMessage[]): string[] {
  const names = new Map<string, string>();
  const lines: string[] = [];
  for (const message of messages) {
    if (message.role === "assistant") for (const call of message.tool_calls ?? []) names.set(call.id, call.name);
    if (message.role === "tool") {
      lines.push(
        `${names.get(message.tool_call_id) ?? message.tool_call_id}: ${message.content.slice(0, QUOTE_CHARS)}`,
      );
    }
  }
  return lines;
}

/** One call per tool named in `text`, in order of first appearance. */
function namedCalls(text: string, toolNames: string[]): ModelToolCall[] {
  const found: { name: string; at: number; end: number }[] = [];
  for (const name of new Set(toolNames)) {
    // A word: not inside a longer name (tool names may hold letters, digits, _ and -).
    const match = new RegExp(`(?<![A-Za-z0-9_-])${escapeRegExp(name)}(?![A-Za-z0-9_-])`).exec(text);
    if (match) found.push({ name, at: match.index, end: match.index + name.length });
  }
  found.sort((a, b) => a.at - b.at);
  return found.map(({ name, end }, index) => ({
    id: `call_${index + 1}`,
    name,
    arguments: JSON.stringify(objectAfter(text, end) ?? {}),
  }));
}

/** The JSON object starting at `from` (after blanks), if one is written there. */
function objectAfter(text: string, from: number): Record<string, unknown> | undefined {
  const start = text.slice(from).search(/\S/) + from;
  if (start < from || text[start] !== "{") return undefined;
  const end = balancedEnd(text, start);
  if (end === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text.slice(start, end));
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The index after the `}` closing the `{` at `start`; braces inside JSON strings do not count. */
function balancedEnd(text: string, start: number): number | undefined {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === "{") depth++;
    else if (char === "}" && --depth === 0) return i + 1;
  }
  return undefined;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
