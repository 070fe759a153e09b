/**
 * Skills activated for a whole session (src/contracts/skillActivations.ts): the ledgers' decisions
 * on activating and deactivating one, and their fold. An activation ends when it is deactivated or
 * when an agent's accepted completion of the skill is recorded (`skills.completed`, the runner's own
 * write: no client can send it).
 */
import type { LedgerEvent, Ledgers } from "../contracts/ledger.ts";
import type { SessionSkillChange } from "../contracts/skillActivations.ts";
import { MAX_SESSION_SKILLS } from "../contracts/skillActivations.ts";

/** The runner's write ending an activation because an agent completed the skill (never a client's request). */
export interface SkillCompletedWrite {
  session_id: string;
  op: "skills.completed";
  skill: string;
}

/** A session-skill write: a client's activate or deactivate, or the runner's completion. */
export type SessionSkillWrite =
  | { session_id: string; op: "skills.activate" | "skills.deactivate"; skill: string }
  | SkillCompletedWrite;

/**
 * Decides a session-skill write against `state`: the event to store (none: nothing changes) and the
 * answer, or why it is refused (one line: the session has as many activations as it may).
 */
export function decideSessionSkill(
  state: Ledgers,
  request: SessionSkillWrite,
  envelope: { session_id: string; by: string; at: string },
): { event: LedgerEvent | null; result: SessionSkillChange } | { refused: string } {
  const { skill } = request;
  const active = state.skills.some((activation) => activation.skill === skill);
  if (request.op === "skills.activate") {
    if (active) return { event: null, result: { skill, active: true, changed: false } };
    if (state.skills.length >= MAX_SESSION_SKILLS)
      return {
        refused: `session ${state.session_id} has ${MAX_SESSION_SKILLS} skills activated, the most it may: deactivate one first`,
      };
    return {
      event: { ...envelope, kind: "SESSION_SKILL_ACTIVATED", payload: { skill } },
      result: { skill, active: true, changed: true },
    };
  }
  if (!active) return { event: null, result: { skill, active: false, changed: false } };
  const reason = request.op === "skills.completed" ? "completed" : "requested";
  return {
    event: { ...envelope, kind: "SESSION_SKILL_DEACTIVATED", payload: { skill, reason } },
    result: { skill, active: false, changed: true },
  };
}

/** The session's activations after one of their events, stored at stream sequence `seq`. */
export function applySessionSkillEvent(
  skills: Ledgers["skills"],
  event: Extract<LedgerEvent, { kind: "SESSION_SKILL_ACTIVATED" | "SESSION_SKILL_DEACTIVATED" }>,
  seq: number,
): Ledgers["skills"] {
  const others = skills.filter((activation) => activation.skill !== event.payload.skill);
  if (event.kind === "SESSION_SKILL_DEACTIVATED") return others;
  return [...others, { skill: event.payload.skill, by: event.by, at: event.at, seq }];
}
