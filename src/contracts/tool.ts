import { z } from "zod";
import { AgentId, MAX_CALL_TIMEOUT_MS, SessionId, TurnId } from "./ids.ts";
import { Usage } from "./usage.ts";

/**
 * A tool's name: a lowercase word of a-z, 0-9 and `_` (it is a NATS subject
 * token, `conclave.tool.<name>`, and an OpenAI function name).
 */
export const ToolName = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,63}$/, "a tool name is a lowercase word of a-z, 0-9 and '_' (at most 64 characters)");
export type ToolName = z.infer<typeof ToolName>;

/** How much harm a call can do: `critical` tools need approval by default. */
export const ToolRisk = z.enum(["safe", "standard", "critical"]);
export type ToolRisk = z.infer<typeof ToolRisk>;

/** Whether a call only reads or changes something outside (a `write` call is dry-run when asked, and may be rolled back). */
export const ToolEffect = z.enum(["read", "write"]);
export type ToolEffect = z.infer<typeof ToolEffect>;

/** What a worker announces about a tool it hosts (beside its agents). */
export const ToolManifest = z.object({
  name: ToolName,
  description: z.string().max(1_000),
  risk: ToolRisk,
  effect: ToolEffect,
  /** The JSON Schema of its arguments (what the model is shown). */
  input_schema: z.record(z.string(), z.unknown()),
  /** The tool has a `dryRun` of its own (else a dry run is reported as simulated). */
  dry_run: z.boolean(),
  /** The tool can undo a call (`rollback`). */
  rollback: z.boolean(),
});
export type ToolManifest = z.infer<typeof ToolManifest>;

/** How a tool is called: for real, as a dry run, or to undo an earlier call. */
export const ToolCallMode = z.enum(["live", "dry_run", "rollback"]);
export type ToolCallMode = z.infer<typeof ToolCallMode>;

/** Requested on `conclave.tool.<name>`: one call of a tool (a runner sends it, a worker hosting the tool answers). */
export const ToolCallRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  call_id: z.string().min(1).max(200),
  /** The same for every attempt of one call: a tool with outside effects deduplicates on it. */
  idempotency_key: z.string().min(1).max(300),
  tool: ToolName,
  args: z.unknown(),
  mode: ToolCallMode,
  /** At most 10 minutes, as an agent's. */
  timeout_ms: z.number().int().positive().max(MAX_CALL_TIMEOUT_MS),
  /** With mode `rollback`: the call to undo, as it was made and answered. */
  undo: z.object({ args: z.unknown(), result: z.unknown() }).optional(),
});
export type ToolCallRequest = z.infer<typeof ToolCallRequest>;

export const ToolCallReply = z.object({
  tool: ToolName,
  call_id: z.string(),
  result: z.unknown(),
  /** A dry run of a tool without `dryRun`: nothing was run. */
  simulated: z.boolean().optional(),
  elapsed_ms: z.number().min(0),
  worker: z.string(),
});
export type ToolCallReply = z.infer<typeof ToolCallReply>;

/** Which agent call asks, on a `tool_subject`: the fields every gate request shares. */
const AgentCallRef = {
  session_id: SessionId,
  turn_id: TurnId,
  agent_id: AgentId,
  /** The recipe node making the call, when a recipe's node called the agent. */
  node: z.string().max(120).optional(),
  /** The agent call's `call_key` (its durable identity in the turn); absent: the agent id. */
  call_key: z.string().min(1).max(200).optional(),
};

/**
 * What an agent's worker asks the runner running its turn, on the request's
 * `tool_subject`: may this agent call this tool with these arguments, and
 * if so the call's result. The runner applies the policy, records the call
 * on the turn's log and makes the call; a call already finished in an
 * earlier attempt of the turn is answered from the log, not made again.
 */
export const ToolGateRequest = z.object({
  ...AgentCallRef,
  /** The call's position among this agent call's tool calls (from 0): with the rest, its durable identity. */
  index: z.number().int().min(0).max(10_000),
  tool: ToolName,
  args: z.unknown(),
  /** How sure the agent is of the plan this call belongs to (0–1): below the policy's gate it needs approval or is refused. */
  confidence: z.number().min(0).max(1).optional(),
});
export type ToolGateRequest = z.infer<typeof ToolGateRequest>;

/** Which ChatModel method a model step used. */
export const ModelStepMethod = z.enum(["structured", "text", "complete"]);
export type ModelStepMethod = z.infer<typeof ModelStepMethod>;

/**
 * What an agent's worker sends the runner after each model call of an agent
 * call that has a `tool_subject`: the call's result, to be recorded as a
 * durable step. The worker goes on once the runner answers (the step is
 * stored); a takeover gives the recorded results back in the agent
 * request's `replay`, so completed model calls are not made again.
 */
export const ModelStepRecord = z.object({
  kind: z.literal("model_step"),
  ...AgentCallRef,
  /** The step's position among this agent call's model calls (from 0). */
  index: z.number().int().min(0).max(10_000),
  method: ModelStepMethod,
  result: z.unknown(),
  usage: Usage.optional(),
});
export type ModelStepRecord = z.infer<typeof ModelStepRecord>;

/**
 * An agent hands part of its work to another agent (`ctx.delegate`), through
 * the runner: the delegated call is one level deeper, and a call deeper than
 * the policy's `max_delegation_depth` is refused as a hard error.
 */
export const DelegateRequest = z.object({
  kind: z.literal("delegate"),
  ...AgentCallRef,
  /** The delegation's position among this agent call's delegations (from 0). */
  index: z.number().int().min(0).max(10_000),
  /** The agent asked. */
  to: AgentId,
  message: z.string().max(16_000),
  /** The asking call's own depth (0: a node's agent). */
  depth: z.number().int().min(0).max(100),
});
export type DelegateRequest = z.infer<typeof DelegateRequest>;

/**
 * A tool's result too large to give an agent whole (over `CONCLAVE_TOOL_OUTPUT_MAX_BYTES` of JSON):
 * what the agent gets, and the turn's log keeps, instead. The whole result is stored by the runner
 * (KV `conclave_tool_outputs`, 24 h) under `handle`; `ctx.tools.read(handle)` reads it back.
 */
export const ToolOutputRef = z.object({
  truncated: z.literal(true),
  /** The start of the result's JSON text. */
  preview: z.string(),
  /** `<session>.<turn>.<call hash>`: what `ctx.tools.read` takes (only within the same turn). Absent: not stored. */
  handle: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}\.[0-9]{1,12}\.[0-9a-f]{16}$/)
    .optional(),
  /** The size of the whole result's JSON text, in bytes. */
  bytes: z.number().int().min(0),
  /** What was stored when less than the whole (at most 960 KiB are). */
  stored_bytes: z.number().int().min(0).optional(),
  /** Why the result could not be stored (then only the preview is left). */
  not_stored: z.string().optional(),
});
export type ToolOutputRef = z.infer<typeof ToolOutputRef>;

/** An agent reads a slice of a large tool result it was given by reference (`ctx.tools.read`). */
export const ToolOutputRead = z.object({
  kind: z.literal("read_output"),
  ...AgentCallRef,
  handle: ToolOutputRef.shape.handle.unwrap(),
  /** Where the slice starts, in bytes of the result's JSON text. */
  offset: z.number().int().min(0).default(0),
  /** How many bytes at most (default and most: 256 KiB). */
  length: z.number().int().min(1).max(262_144).default(262_144),
});
export type ToolOutputRead = z.infer<typeof ToolOutputRead>;

/** A slice of a stored result: its text, where it starts, and the whole result's size. */
export const ToolOutputSlice = z.object({ text: z.string(), offset: z.number().int(), bytes: z.number().int() });
export type ToolOutputSlice = z.infer<typeof ToolOutputSlice>;

/** Anything a worker asks on a `tool_subject`: a tool call, a model step to record, a delegation, or a read of a stored result. */
export const GateRequest = z.union([ModelStepRecord, DelegateRequest, ToolOutputRead, ToolGateRequest]);
export type GateRequest = z.infer<typeof GateRequest>;

/** Why a call was not made: the policy refused it, it needs approval, it is over a limit, or it failed. */
export const ToolRefusal = z.enum([
  "denied",
  "approval_required",
  "limit",
  "unknown_tool",
  "failed",
  "invalid_args",
  "delegation_depth_exceeded",
]);
export type ToolRefusal = z.infer<typeof ToolRefusal>;

export const ToolGateReply = z.discriminatedUnion("ok", [
  z.object({
    ok: z.literal(true),
    call_id: z.string(),
    result: z.unknown(),
    simulated: z.boolean().optional(),
    /** Answered from the turn's log: the call finished in an earlier attempt and was not made again. */
    replayed: z.boolean().optional(),
  }),
  z.object({ ok: z.literal(false), call_id: z.string(), refusal: ToolRefusal, message: z.string() }),
]);
export type ToolGateReply = z.infer<typeof ToolGateReply>;

/** Requested on `conclave.turn.rollback.<session_id>`: undo a finished turn's executed write calls, last first. */
export const RollbackRequest = z.object({ turn_id: TurnId });
export type RollbackRequest = z.infer<typeof RollbackRequest>;

/** What a rollback did: each call it tried to undo, in the order it tried. */
export const RollbackReply = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  calls: z.array(z.object({ call_id: z.string(), tool: ToolName, ok: z.boolean(), error: z.string().optional() })),
});
export type RollbackReply = z.infer<typeof RollbackReply>;

/** A tool call as the turn's log records it (`call_id` is `<agent or node>/<agent call>/<index>`). */
const ToolCallRef = {
  call_id: z.string(),
  tool: ToolName,
  agent_id: AgentId,
  node: z.string().optional(),
};

/** The tool-call and model-step events of a turn's log. */
export const ToolEventPayloads = {
  /** A model call of an agent call finished: a durable step (a takeover replays its result, not the call). */
  MODEL_CALL_COMPLETED: z.object({
    call_key: z.string(),
    agent_id: AgentId,
    node: z.string().optional(),
    index: z.number().int().min(0),
    method: ModelStepMethod,
    result: z.unknown(),
    usage: Usage.optional(),
  }),
  /** An agent asked for a call; `args` as the request interceptors left them (redacted). */
  TOOL_CALL_REQUESTED: z.object({
    ...ToolCallRef,
    args: z.unknown(),
    risk: ToolRisk,
    effect: ToolEffect,
    mode: ToolCallMode,
  }),
  /** The policy let it through (`rule` names what decided). */
  TOOL_CALL_APPROVED: z.object({ ...ToolCallRef, rule: z.string() }),
  /** The policy refused it, or it needs an approval this turn cannot ask for. */
  TOOL_CALL_DENIED: z.object({ ...ToolCallRef, refusal: ToolRefusal, rule: z.string(), message: z.string() }),
  TOOL_CALL_STARTED: z.object({ ...ToolCallRef, idempotency_key: z.string() }),
  /** An agent delegated to another (`ctx.delegate`): its answer, or why not (a depth past the limit is a hard error). */
  AGENT_DELEGATED: z.object({
    call_id: z.string(),
    agent_id: AgentId,
    node: z.string().optional(),
    to: AgentId,
    depth: z.number().int().min(1),
    ok: z.boolean(),
    output: z.unknown().optional(),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
  }),
  /**
   * `conclave rollback` undid a finished live write call through its tool's
   * `rollback` (or tried: `ok` false with the error). Appended after the
   * turn's TURN_COMPLETED: a rollback comes after the turn.
   */
  TOOL_CALL_ROLLED_BACK: z.object({
    ...ToolCallRef,
    ok: z.boolean(),
    result: z.unknown().optional(),
    error: z.string().optional(),
  }),
  /** The call ended: its result (through the response interceptors), or its error. */
  TOOL_CALL_FINISHED: z.object({
    ...ToolCallRef,
    ok: z.boolean(),
    result: z.unknown().optional(),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
    simulated: z.boolean().optional(),
    elapsed_ms: z.number().min(0),
    worker: z.string().optional(),
  }),
} as const;
