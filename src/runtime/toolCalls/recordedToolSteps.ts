import type { FinishedToolCall } from "../../../machines/session.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import type { HumanAnswer } from "../../contracts/recipeRun.ts";
import type { ApprovalAnswer } from "./turnToolCalls.ts";

/**
 * What an earlier attempt of a turn recorded of its agents' durable steps:
 * finished tool calls, model steps, finished delegations and people's
 * answers to approvals. A turn going on from its log (a takeover, or a
 * suspension answered) answers these from here and does not make them again.
 */
export interface RecordedToolSteps {
  /** Tool calls, by call id. */
  finished: Record<string, FinishedToolCall>;
  /** Model calls, by agent call (`call_key`), in order. */
  modelSteps: Record<string, { method: string; result: unknown }[]>;
  /** Delegations that answered, by call id. */
  delegations: Record<string, { output: unknown }>;
  /** Answers to approvals, by call id. */
  approvals: Record<string, ApprovalAnswer>;
}

/** The approval an answer gives (`{ call_id, approved, reason? }`), or null when it answers no approval. */
export function approvalOf(answer: HumanAnswer): { callId: string; answer: ApprovalAnswer } | null {
  const given = answer.answer as { approved?: unknown; call_id?: unknown; reason?: unknown } | null;
  if (typeof given?.call_id !== "string" || typeof given.approved !== "boolean") return null;
  return {
    callId: given.call_id,
    answer: {
      approved: given.approved,
      ...(answer.user_id ? { user_id: answer.user_id } : {}),
      ...(typeof given.reason === "string" ? { reason: given.reason } : {}),
    },
  };
}

/** Folds a turn's stored events into the durable steps its agents already took. */
export function recordedToolSteps(stored: readonly EngineEvent[]): RecordedToolSteps {
  const steps: RecordedToolSteps = { finished: {}, modelSteps: {}, delegations: {}, approvals: {} };
  for (const event of stored) {
    switch (event.kind) {
      case "AGENT_DELEGATED":
        if (event.payload.ok) steps.delegations[event.payload.call_id] = { output: event.payload.output };
        break;
      case "MODEL_CALL_COMPLETED": {
        const { call_key, index, method, result } = event.payload;
        const calls = steps.modelSteps[call_key] ?? [];
        calls[index] = { method, result };
        steps.modelSteps[call_key] = calls;
        break;
      }
      case "TOOL_CALL_FINISHED": {
        const { ok, result, error, simulated } = event.payload;
        steps.finished[event.payload.call_id] = {
          ok,
          ...(result !== undefined ? { result } : {}),
          ...(error ? { error } : {}),
          ...(simulated ? { simulated } : {}),
        };
        break;
      }
      case "HUMAN_INPUT_RECEIVED": {
        const approval = approvalOf(event.payload);
        if (approval) steps.approvals[approval.callId] = approval.answer;
        break;
      }
    }
  }
  return steps;
}
