import type { FinishedToolCall } from "../../../machines/session.ts";
import { scrubSecrets } from "../../config/secrets.ts";
import { checkCompactionGate, type GateState } from "../../context/budget.ts";
import type { AgentReply } from "../../contracts/agent.ts";
import type { ToolApproval } from "../../contracts/recipeRun.ts";
import type {
  DelegateRequest,
  ModelStepRecord,
  ToolCallReply,
  ToolCallRequest,
  ToolGateReply,
  ToolGateRequest,
  ToolManifest,
  ToolRisk,
} from "../../contracts/tool.ts";
import { turnKey } from "../../contracts/turnKey.ts";
import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import { codeOf, messageOf } from "../../errors.ts";
import { decideToolCall, delegationDepthOf, dryRunOf, parallelSlotsOf, type ToolPolicy } from "../../tools/policy.ts";
import { stricterRisk } from "../../tools/risk.ts";
import type { Slots } from "./slots.ts";

/** Longest a tool call may take, by default. */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

type FinishedCall = FinishedToolCall;

/** A person's answer to a tool call's approval. */
export interface ApprovalAnswer {
  approved: boolean;
  user_id?: string;
  reason?: string;
}

/** What the runner tells the gate about a turn whose agents may call tools. */
export interface TurnTools {
  /** The policies in force (the runner's, then the recipe's): the stricter wins. */
  policies: readonly ToolPolicy[];
  /** The tools the turn's agents may call at all (the recipe names them). */
  allowed: ReadonlySet<string>;
  /** Risks the recipe declares, by tool (the stricter of these and the tool's own applies). */
  risks?: Readonly<Record<string, ToolRisk>>;
  /** Records an event on the turn's log. */
  record(body: TurnRecord): void;
  /** The request interceptors on a call's arguments (redaction): what the log keeps. */
  screenArgs(args: unknown): Promise<unknown>;
  /** Calls an earlier attempt of the turn finished (from its log), by call id: answered from here, not made again. */
  finished?: Readonly<Record<string, FinishedToolCall>>;
  /** Model steps an earlier attempt recorded, by agent call: what `replayOf` gives back. */
  modelSteps?: Readonly<Record<string, readonly { method: string; result: unknown }[]>>;
  /** Resolves once everything recorded so far is stored. */
  flushed(): Promise<void>;
  /**
   * Asks another agent for a delegated call (`ctx.delegate`): the request is
   * the caller's, one level deeper. Absent: delegation is refused.
   */
  delegateTo?(request: { to: string; message: string; depth: number; callKey: string }): Promise<AgentReply>;
  /** The agents the turn's agents may delegate to. */
  delegates?: ReadonlySet<string>;
  /** Delegations an earlier attempt finished, by call id: answered from here. */
  delegated?: Readonly<Record<string, { output: unknown }>>;
  /** People's answers to approvals asked in earlier attempts of the run, by call id. */
  approvals?: Readonly<Record<string, ApprovalAnswer>>;
  /**
   * Asks for a person's approval of a call: the agent call's node suspends
   * the run (true), or nobody can wait for one (false: the call is refused).
   */
  askApproval?(callKey: string, request: { approval: ToolApproval; prompt: string; required_role: string }): boolean;
  /** Fires when the turn ends: calls in flight are stopped. */
  signal: AbortSignal;
  /** Per call. Default 30 s. */
  timeoutMs?: number;
  /**
   * What the agent gets (and the log keeps) of a finished call's result: a large one by reference
   * (toolOutputs.ts). Default: the result as it is.
   */
  storeOutput?(callId: string, result: unknown): Promise<unknown>;
  /**
   * The session's context pressure, for the compaction gate (docs/context.md): at critical pressure
   * before compaction has run, a heavy call (a write) is refused. Absent, or null: no gate.
   */
  compactionGate?(): GateState | null;
  /**
   * Tools the runner answers itself, by name (the working memory's update): a call of one the turn
   * allows goes to it, which records and answers it, instead of to a worker.
   */
  ownTools?: Readonly<Record<string, (request: ToolGateRequest, callId: string) => Promise<ToolGateReply>>>;
}

interface OpenTurn extends Omit<TurnTools, "finished"> {
  finished: Map<string, FinishedCall>;
  calls: number;
  perTool: Map<string, number>;
}

/** Where a turn's tool calls are made: the live tools, the session's slots, and the call itself. */
export interface ToolHost {
  /** The manifest of a tool a live worker (or this process) hosts. */
  manifest(name: string): Promise<ToolManifest | undefined> | ToolManifest | undefined;
  /** The session's parallel slots, of this size. */
  slots(size: number): Slots;
  /** Makes one call. */
  invoke(call: ToolCallRequest, signal: AbortSignal): Promise<ToolCallReply>;
  /** Told after each call frees its slot. */
  released?(): void;
}

/**
 * One turn's tool calls and model steps, whatever carries them (the runner's
 * gate over NATS, or the in-process engine): the policies decide each call,
 * the turn's log records it (requested, approved or denied, started,
 * finished), a call needing approval asks for it, and a call an earlier
 * attempt finished is answered from the log, not made again.
 */
export class TurnToolCalls {
  readonly #turn: OpenTurn;
  #closed = false;

  constructor(tools: TurnTools) {
    this.#turn = {
      ...tools,
      // Nothing is recorded once the turn is closed: its log may already end (a call still in flight
      // when the run completed, was cancelled or suspended must not write after its last event).
      record: (body) => {
        if (!this.#closed) tools.record(body);
      },
      finished: new Map(Object.entries(tools.finished ?? {})),
      calls: 0,
      perTool: new Map(),
    };
  }

  /** The turn's run ended (or suspended): calls still in flight record nothing more. */
  close(): void {
    this.#closed = true;
  }

  /** The model steps an earlier attempt recorded for this agent call (empty: none). */
  replayOf(callKey: string): unknown[] {
    return [...(this.#turn.modelSteps?.[callKey] ?? [])];
  }

  /** Records a model step, and answers once it is stored: the agent goes on from stored steps only. */
  async step(step: ModelStepRecord): Promise<ToolGateReply> {
    const turn = this.#turn;
    turn.record({
      kind: "MODEL_CALL_COMPLETED",
      payload: {
        call_key: step.call_key ?? step.agent_id,
        agent_id: step.agent_id,
        ...(step.node ? { node: step.node } : {}),
        index: step.index,
        method: step.method,
        result: step.result,
        ...(step.usage ? { usage: step.usage } : {}),
      },
    });
    await turn.flushed();
    return { ok: true, call_id: `${step.call_key ?? step.agent_id}/model/${step.index}`, result: null };
  }

  /**
   * A delegation: past the policies' `max_delegation_depth` it is refused
   * (`delegation_depth_exceeded`, a hard error for the asking agent call);
   * else the agent asked answers, and its output is the reply.
   */
  async delegate(request: DelegateRequest): Promise<ToolGateReply> {
    const turn = this.#turn;
    const callKey = request.call_key ?? request.agent_id;
    const callId = `${callKey}/delegate/${request.index}`;
    const depth = request.depth + 1;
    const ref = {
      call_id: callId,
      agent_id: request.agent_id,
      ...(request.node ? { node: request.node } : {}),
      to: request.to,
      depth,
    };
    const done = turn.delegated?.[callId];
    if (done) return { ok: true, call_id: callId, result: done.output, replayed: true };
    if (!turn.delegateTo || !turn.delegates?.has(request.to)) {
      const message = `${request.agent_id} may not delegate to ${request.to} here`;
      turn.record({ kind: "AGENT_DELEGATED", payload: { ...ref, ok: false, error: { code: "denied", message } } });
      return refuse(callId, "denied", message);
    }
    const limit = delegationDepthOf(turn.policies);
    if (depth > limit) {
      const message = `${request.agent_id} delegating to ${request.to} would be ${depth} deep; policy max_delegation_depth is ${limit}`;
      turn.record({
        kind: "AGENT_DELEGATED",
        payload: { ...ref, ok: false, error: { code: "delegation_depth_exceeded", message } },
      });
      return refuse(callId, "delegation_depth_exceeded", message);
    }
    try {
      const reply = await turn.delegateTo({ to: request.to, message: request.message, depth, callKey: callId });
      const output = reply.output ?? reply.contribution;
      turn.record({ kind: "AGENT_DELEGATED", payload: { ...ref, ok: true, output } });
      await turn.flushed();
      return { ok: true, call_id: callId, result: output };
    } catch (error) {
      const failure = {
        code: codeOf(error) ?? "agent_failed",
        message: scrubSecrets(messageOf(error)),
      };
      turn.record({ kind: "AGENT_DELEGATED", payload: { ...ref, ok: false, error: failure } });
      // A deeper call refused for its depth fails every call above it the same way.
      return refuse(
        callId,
        failure.code === "delegation_depth_exceeded" ? "delegation_depth_exceeded" : "failed",
        failure.message,
      );
    }
  }

  async call(request: ToolGateRequest, where: ToolHost): Promise<ToolGateReply> {
    const callId = `${request.call_key ?? request.agent_id}/${request.index}`;
    const turn = this.#turn;
    const ref = {
      call_id: callId,
      tool: request.tool,
      agent_id: request.agent_id,
      ...(request.node ? { node: request.node } : {}),
    };
    const count = () => {
      turn.calls++;
      turn.perTool.set(request.tool, (turn.perTool.get(request.tool) ?? 0) + 1);
    };
    const own = turn.allowed.has(request.tool) ? turn.ownTools?.[request.tool] : undefined;
    if (own) return own(request, callId);
    const done = turn.finished.get(callId);
    if (done) {
      count();
      return done.ok
        ? {
            ok: true,
            call_id: callId,
            result: done.result,
            replayed: true,
            ...(done.simulated ? { simulated: true } : {}),
          }
        : refuse(callId, "failed", done.error?.message ?? "the call failed");
    }
    const live: ToolManifest | undefined = turn.allowed.has(request.tool)
      ? await where.manifest(request.tool)
      : undefined;
    const manifest = live && { ...live, risk: stricterRisk(live.risk, turn.risks?.[request.tool]) };
    const dryRun = dryRunOf(turn.policies);
    const mode = dryRun && manifest?.effect === "write" ? "dry_run" : "live";
    if (!manifest) {
      const message = turn.allowed.has(request.tool)
        ? `no worker hosts the tool ${request.tool}`
        : `the tool ${request.tool} is not offered to this agent`;
      turn.record({
        kind: "TOOL_CALL_DENIED",
        payload: { ...ref, refusal: "unknown_tool", rule: "offered", message },
      });
      return refuse(callId, "unknown_tool", message);
    }
    const screened = await turn.screenArgs(request.args);
    turn.record({
      kind: "TOOL_CALL_REQUESTED",
      payload: {
        ...ref,
        args: screened,
        risk: manifest.risk,
        effect: manifest.effect,
        mode,
      },
    });
    const gated = compactionRefusal(turn.compactionGate?.() ?? null, request.tool, manifest.effect);
    if (gated) {
      turn.record({
        kind: "TOOL_CALL_DENIED",
        payload: { ...ref, refusal: "denied", rule: "compaction_gate", message: gated },
      });
      return refuse(callId, "denied", gated);
    }
    const decision = decideToolCall(turn.policies, {
      tool: manifest,
      ...(request.confidence !== undefined ? { confidence: request.confidence } : {}),
      turnCalls: turn.calls,
      toolCalls: turn.perTool.get(request.tool) ?? 0,
    });
    count();
    let rule = decision.rule;
    // A dry run changes nothing: what would need a person's approval live only simulates here.
    if (decision.verdict === "approve" && mode === "dry_run") rule = `${rule} (dry run: no approval needed)`;
    else if (decision.verdict === "approve") {
      const answer = turn.approvals?.[callId];
      if (answer) {
        const by = `${answer.approved ? "approved" : "denied"} by ${answer.user_id ?? "someone"}`;
        rule = `${by}${answer.reason ? `: ${answer.reason}` : ""}`;
        if (!answer.approved) {
          turn.record({
            kind: "TOOL_CALL_DENIED",
            payload: { ...ref, refusal: "denied", rule, message: `${request.tool}: ${rule}` },
          });
          return refuse(callId, "denied", `${request.tool}: ${rule}`);
        }
      } else {
        const approval = { call_id: callId, tool: request.tool, args: screened, reason: decision.message };
        const asked = turn.askApproval?.(request.call_key ?? request.agent_id, {
          approval,
          prompt: `Approve ${request.tool}(${JSON.stringify(screened)})? ${decision.message}`,
          required_role: turn.policies[0]?.approver_role ?? "operator",
        });
        if (!asked)
          turn.record({
            kind: "TOOL_CALL_DENIED",
            payload: {
              ...ref,
              refusal: "approval_required",
              rule,
              message: `${decision.message}; nobody can approve it here`,
            },
          });
        return refuse(callId, "approval_required", decision.message);
      }
    } else if (decision.verdict === "deny") {
      turn.record({
        kind: "TOOL_CALL_DENIED",
        payload: { ...ref, refusal: decision.refusal, rule, message: decision.message },
      });
      return refuse(callId, decision.refusal, decision.message);
    }
    turn.record({ kind: "TOOL_CALL_APPROVED", payload: { ...ref, rule } });
    const slots = where.slots(parallelSlotsOf(turn.policies));
    let release: () => void;
    try {
      release = await slots.take(turn.signal);
    } catch {
      return refuse(callId, "failed", "the turn ended before a slot was free");
    }
    const idempotencyKey = `${turnKey(request.session_id, request.turn_id)}.${callId}`;
    const started = performance.now();
    turn.record({ kind: "TOOL_CALL_STARTED", payload: { ...ref, idempotency_key: idempotencyKey } });
    const timeoutMs = turn.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    const call: ToolCallRequest = {
      session_id: request.session_id,
      turn_id: request.turn_id,
      call_id: callId,
      idempotency_key: idempotencyKey,
      tool: request.tool,
      args: request.args,
      mode,
      timeout_ms: timeoutMs,
    };
    try {
      const reply = await where.invoke(call, turn.signal);
      const result = turn.storeOutput ? await turn.storeOutput(callId, reply.result) : reply.result;
      const finished: FinishedCall = {
        ok: true,
        result,
        ...(reply.simulated ? { simulated: true } : {}),
      };
      turn.finished.set(callId, finished);
      turn.record({
        kind: "TOOL_CALL_FINISHED",
        payload: { ...ref, ...finished, elapsed_ms: elapsedSince(started), worker: reply.worker },
      });
      // A finished call is a durable step: the agent learns its result once the log holds it.
      await turn.flushed();
      return { ok: true, call_id: callId, result, ...(reply.simulated ? { simulated: true } : {}) };
    } catch (error) {
      const failure = {
        code: codeOf(error) ?? "tool_failed",
        message: scrubSecrets(messageOf(error)),
      };
      turn.finished.set(callId, { ok: false, error: failure });
      turn.record({
        kind: "TOOL_CALL_FINISHED",
        payload: { ...ref, ok: false, error: failure, elapsed_ms: elapsedSince(started) },
      });
      return refuse(callId, "failed", failure.message);
    } finally {
      release();
      where.released?.();
    }
  }
}

/** Why the compaction gate refuses this call (null: it does not). */
function compactionRefusal(gate: GateState | null, tool: string, effect: ToolManifest["effect"]): string | null {
  if (!gate) return null;
  try {
    checkCompactionGate(gate, { name: tool, effect });
    return null;
  } catch (error) {
    return messageOf(error);
  }
}

const elapsedSince = (started: number) => Math.round((performance.now() - started) * 1000) / 1000;

const refuse = (callId: string, refusal: Extract<ToolGateReply, { ok: false }>["refusal"], message: string) =>
  ({ ok: false, call_id: callId, refusal, message }) satisfies ToolGateReply;
