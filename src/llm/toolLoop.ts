import type { ChatMessage, ChatModel, ModelTool, ModelToolCall } from "../contracts/model.ts";
import { addUsage, noUsage, type Usage } from "../contracts/usage.ts";
import { ConclaveError, messageOf } from "../errors.ts";

/** Rounds a loop may take when the caller does not say. */
export const DEFAULT_TOOL_ROUNDS = 4;

/** One tool call the model asked for, and how it ended. */
export interface ToolLoopCall {
  id: string;
  name: string;
  /** The parsed arguments; the raw text when it was not valid JSON (then `error` says so). */
  args: unknown;
  /** What `callTool` returned, when it returned. */
  result?: unknown;
  /** Why the call has no result: its arguments were not JSON, or `callTool` threw. */
  error?: string;
}

export interface ToolLoopOptions {
  model: ChatModel;
  /** Who asks, for usage accounting and errors. */
  caller: string;
  system: string;
  user: string;
  /** The tools offered in every round. */
  tools: ModelTool[];
  /**
   * Runs one call. What it returns is sent to the model as JSON; what it throws is sent as
   * `{"error": message}` and the loop goes on, so the model can react (retry, apologise, give up).
   */
  callTool(call: { id: string; name: string; args: unknown }): Promise<unknown>;
  /**
   * True for a `callTool` error that ends the loop, thrown as it is, instead of going back to the
   * model (a call waiting for a person's approval: the turn suspends). Default: none does.
   */
  halts?(error: unknown): boolean;
  /** Model calls at most, each of which may ask for tools; default 4. */
  maxRounds?: number;
  /** Stops the loop: the model call under way (or the next one) fails with LlmError `aborted`. */
  signal?: AbortSignal;
  /** Deadline of each model call (not of the whole loop). */
  timeoutMs?: number;
  maxTokens?: number;
}

export interface ToolLoopResult {
  /** The model's final answer (empty if it sent no text). */
  text: string;
  /** Every call made, in order, over all rounds. */
  calls: ToolLoopCall[];
  /** Model calls made, the last one being the answer. */
  rounds: number;
  /** Summed over all rounds. */
  usage: Usage;
}

/**
 * The model still asked for tools in the last allowed round. Carries the calls made so a caller
 * can report or log them; the code is `tool_rounds_exhausted`.
 */
export class ToolLoopExhaustedError extends ConclaveError<"tool_rounds_exhausted"> {
  readonly caller: string;
  readonly calls: ToolLoopCall[];
  readonly rounds: number;
  readonly usage: Usage;

  constructor(caller: string, rounds: number, calls: ToolLoopCall[], usage: Usage) {
    super(
      "tool_rounds_exhausted",
      `${caller}: the model still asked for tools after ${rounds} rounds (${calls.length} calls made)`,
    );
    this.caller = caller;
    this.calls = calls;
    this.rounds = rounds;
    this.usage = usage;
  }
}

/**
 * The bounded tool-calling loop: ask the model, run the calls it asks for in order, send their
 * results back, and repeat until it answers without calls — at most `maxRounds` model calls.
 * A call's failure (arguments that are not JSON, `callTool` throwing) is the model's to handle,
 * not the loop's: it goes back as `{"error": ...}`. Model failures (LlmError) are thrown as they are.
 */
export async function runToolLoop(options: ToolLoopOptions): Promise<ToolLoopResult> {
  const maxRounds = options.maxRounds ?? DEFAULT_TOOL_ROUNDS;
  if (!Number.isInteger(maxRounds) || maxRounds < 1) {
    throw new RangeError(`maxRounds must be a positive integer, not ${maxRounds}`);
  }
  const messages: ChatMessage[] = [
    { role: "system", content: options.system },
    { role: "user", content: options.user },
  ];
  const calls: ToolLoopCall[] = [];
  let usage = noUsage();
  for (let round = 1; round <= maxRounds; round++) {
    const reply = await options.model.complete({
      caller: options.caller,
      messages,
      tools: options.tools,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      maxTokens: options.maxTokens,
    });
    usage = addUsage(usage, reply.usage);
    if (reply.toolCalls.length === 0) return { text: reply.content ?? "", calls, rounds: round, usage };
    messages.push({ role: "assistant", content: reply.content, tool_calls: reply.toolCalls });
    for (const toolCall of reply.toolCalls) {
      // Aborted: run no more tools; the next model call rejects with the abort.
      if (options.signal?.aborted) break;
      const call = await runCall(toolCall, options.callTool, options.halts);
      calls.push(call);
      messages.push({ role: "tool", tool_call_id: call.id, content: toolMessageContent(call) });
    }
  }
  throw new ToolLoopExhaustedError(options.caller, maxRounds, calls, usage);
}

async function runCall(
  toolCall: ModelToolCall,
  callTool: ToolLoopOptions["callTool"],
  halts: ToolLoopOptions["halts"],
): Promise<ToolLoopCall> {
  const { id, name } = toolCall;
  let args: unknown;
  try {
    args = JSON.parse(toolCall.arguments);
  } catch (error) {
    return { id, name, args: toolCall.arguments, error: `arguments are not valid JSON: ${messageOf(error)}` };
  }
  try {
    return { id, name, args, result: await callTool({ id, name, args }) };
  } catch (error) {
    if (halts?.(error)) throw error;
    return { id, name, args, error: messageOf(error) };
  }
}

/** The result as JSON; a result JSON cannot carry (a BigInt, a cycle) becomes an error for the model. */
function toolMessageContent(call: ToolLoopCall): string {
  if (call.error !== undefined) return JSON.stringify({ error: call.error });
  try {
    // JSON.stringify(undefined) is undefined, not text: a tool that returns nothing answers null.
    return JSON.stringify(call.result ?? null);
  } catch (error) {
    call.error = `the result is not JSON: ${messageOf(error)}`;
    return JSON.stringify({ error: call.error });
  }
}
