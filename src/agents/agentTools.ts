import type { AgentRequest } from "../contracts/agent.ts";
import type { ChatModel } from "../contracts/model.ts";
import {
  type GateRequest,
  type ToolGateReply,
  type ToolManifest,
  ToolOutputSlice,
  type ToolRefusal,
} from "../contracts/tool.ts";
import type { Usage } from "../contracts/usage.ts";
import { ConclaveError } from "../errors.ts";
import { runToolLoop } from "../llm/toolLoop.ts";

/** The runner refused a tool call (policy, limit, approval) or the call failed: `refusal` says which. */
export class ToolCallRefusedError extends ConclaveError<"tool_failed"> {
  constructor(
    readonly tool: string,
    readonly refusal: ToolRefusal,
    message: string,
  ) {
    super("tool_failed", `tool ${tool}: ${refusal}: ${message}`);
  }
}

/** An agent delegated deeper than the policy's `max_delegation_depth`: a hard error, it fails the agent's call. */
export class DelegationDepthError extends ConclaveError<"delegation_depth_exceeded"> {
  constructor(message: string) {
    super("delegation_depth_exceeded", message);
  }
}

/** A tool-calling conversation with the model: what it answered, and the calls it made. */
export interface ToolRunResult {
  /** The model's last answer. */
  text: string;
  calls: { id: string; name: string; args: unknown; result?: unknown; error?: string }[];
}

/**
 * The tools an agent call may use (`ctx.tools`). Every call goes through the
 * runner running the turn, which applies its policy, records the call on the
 * turn's log and answers a call an earlier attempt finished from the log.
 */
export interface AgentTools {
  /** The tools offered to this call (empty: none). */
  readonly available: readonly ToolManifest[];
  /**
   * Calls a tool. Resolves to its result; rejects with ToolCallRefusedError
   * when the policy refuses it, it needs an approval, or it failed.
   */
  call(name: string, args: unknown, options?: { confidence?: number }): Promise<unknown>;
  /**
   * Reads back a slice of a result too large to be given whole: a call's result `{ truncated: true,
   * preview, handle, bytes }` (over the runner's `CONCLAVE_TOOL_OUTPUT_MAX_BYTES`) names its `handle`.
   * `offset` and `length` count bytes of the result's JSON text (default: from 0, up to 256 KiB).
   */
  read(handle: string, options?: { offset?: number; length?: number }): Promise<ToolOutputSlice>;
  /**
   * Lets the model call the offered tools (OpenAI tool calling) until it
   * answers without a call, at most `maxRounds` rounds (default 4). In the
   * offline mode the deterministic OfflineToolModel plays the model: it calls
   * the tools the message names. Each round is a durable step of the turn.
   */
  run(request: {
    system: string;
    user: string;
    /** Which offered tools to give the model. Default: all. */
    tools?: readonly string[];
    maxRounds?: number;
    /** The plan's confidence, for the policy's confidence gate. */
    confidence?: number;
  }): Promise<ToolRunResult>;
}

/** Which agent call asks the runner: the fields every gate request shares. */
export const callRefOf = (request: AgentRequest) => ({
  session_id: request.session_id,
  turn_id: request.turn_id,
  agent_id: request.agent_id,
  ...(request.recipe ? { node: request.recipe.node } : {}),
  ...(request.call_key ? { call_key: request.call_key } : {}),
});

/** How an agent's worker reaches the runner's gate: tool calls, and model steps to record. */
export type AskGate = (request: GateRequest) => Promise<ToolGateReply>;

/** `ctx.tools` for one agent call. */
/**
 * `ctx.delegate` for one agent call: asks another agent, through the runner,
 * one level deeper. A refusal for depth is remembered in `hard` so the call
 * fails even if the agent catches the error.
 */
export function agentDelegation(
  request: AgentRequest,
  ask: AskGate | undefined,
  hard: { error?: DelegationDepthError },
): (to: string, message: string) => Promise<unknown> {
  let index = 0;
  return async (to, message) => {
    if (!ask || !(request.delegates ?? []).includes(to))
      throw new ToolCallRefusedError(to, "denied", `this agent call may not delegate to ${to}`);
    const reply = await ask({
      kind: "delegate",
      ...callRefOf(request),
      index: index++,
      to,
      message,
      depth: request.delegation_depth ?? 0,
    });
    if (reply.ok) return reply.result;
    if (reply.refusal === "delegation_depth_exceeded") {
      hard.error ??= new DelegationDepthError(reply.message);
      throw hard.error;
    }
    throw new ToolCallRefusedError(to, reply.refusal, reply.message);
  };
}

/** Why a tool is not offered, and the fix: where the tool must be listed, and how a worker hosts it. */
function notOfferedMessage(name: string, request: AgentRequest): string {
  const hosted =
    "a worker must host it: export it with defineTool from the agent's --agents module, or give its module to --tools";
  if (request.recipe)
    return `it is not offered to this agent call: list '${name}' in the recipe node's tools, and ${hosted}`;
  return `it is not offered to this agent call: list '${name}' in the agent's tools (defineAgent({ tools: [...] })), and ${hosted}`;
}

export function agentTools(
  request: AgentRequest,
  options: {
    ask: AskGate | undefined;
    /** The model the tool loop talks to (the offline model in the offline mode). */
    model: ChatModel;
    signal: AbortSignal;
    maxTokens: number;
    count: (usage: Usage) => void;
  },
): AgentTools {
  const available = request.tools ?? [];
  let index = 0;
  const call = async (name: string, args: unknown, callOptions: { confidence?: number } = {}) => {
    if (!options.ask || !available.some((tool) => tool.name === name))
      throw new ToolCallRefusedError(name, "unknown_tool", notOfferedMessage(name, request));
    const reply = await options.ask({
      ...callRefOf(request),
      // Calls are numbered in the order the agent makes them: the same run makes the same calls again.
      index: index++,
      tool: name,
      args,
      ...(callOptions.confidence !== undefined ? { confidence: callOptions.confidence } : {}),
    });
    if (!reply.ok) throw new ToolCallRefusedError(name, reply.refusal, reply.message);
    return reply.result;
  };
  const read: AgentTools["read"] = async (handle, readOptions = {}) => {
    if (!options.ask) throw new ToolCallRefusedError("read", "unknown_tool", "no tools are offered to this agent call");
    const reply = await options.ask({
      kind: "read_output",
      ...callRefOf(request),
      handle,
      offset: readOptions.offset ?? 0,
      length: readOptions.length ?? 262_144,
    });
    if (!reply.ok) throw new ToolCallRefusedError("read", reply.refusal, reply.message);
    return ToolOutputSlice.parse(reply.result);
  };
  return {
    available,
    call,
    read,
    run: async ({ system, user, tools, maxRounds, confidence }) => {
      const offered = available.filter((tool) => !tools || tools.includes(tool.name));
      const result = await runToolLoop({
        model: options.model,
        caller: `agent:${request.agent_id}`,
        system,
        user,
        tools: offered.map((tool) => ({
          name: tool.name,
          description: tool.description,
          parameters: tool.input_schema,
        })),
        callTool: ({ name, args }) => call(name, args, confidence !== undefined ? { confidence } : {}),
        // A call waiting for approval suspends the turn: the model is not told of a refusal that is not one.
        halts: (error) => error instanceof ToolCallRefusedError && error.refusal === "approval_required",
        ...(maxRounds !== undefined ? { maxRounds } : {}),
        signal: options.signal,
        timeoutMs: request.timeout_ms,
        maxTokens: options.maxTokens,
      });
      options.count(result.usage);
      return { text: result.text, calls: result.calls };
    },
  };
}
