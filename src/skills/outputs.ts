/**
 * The skills' lifecycle as a session's log holds it, folded: which skills are
 * active, the outputs each recorded, and the outputs a skill consumes. Pure:
 * the events in, the answer out (the client API and `conclave skills outputs`
 * read the log and ask here).
 */
import type { EngineEvent } from "../contracts/events.ts";
import type { SessionSkillActivation } from "../contracts/skillActivations.ts";

/** One recorded output of a skill (an accepted SKILL_COMPLETED). */
export interface SkillOutput {
  readonly skill: string;
  readonly output: unknown;
  /** The turn it was completed in, and by whom. */
  readonly turn_id: number;
  readonly agent_id: string;
  readonly node?: string;
}

/** A completion the skill's output schema refused (a SKILL_COMPLETED with `ok: false`). */
export interface SkillRefusal {
  readonly skill: string;
  readonly turn_id: number;
  readonly agent_id: string;
  readonly issues: readonly string[];
}

/** A skill active in a session, and why. */
export interface ActiveSkill {
  readonly skill: string;
  /**
   * `client`: activated for the session (`client.skills.activate`, SESSION_SKILL_ACTIVATED) and not
   * deactivated or completed since: every agent of its later turns is given it;
   * `activated`: an agent activated it (SKILL_ACTIVATED) and no accepted completion came after;
   * `routed`: the session's latest turn loaded it into an agent's context (AGENT_COMPLETED.skills, or a
   * recipe node's NODE_COMPLETED.skills).
   */
  readonly via: "client" | "activated" | "routed";
  /** The turn it became active in (absent for `client`: activated between turns). */
  readonly turn_id?: number;
  /** `client`: who activated it (`user`, `user:<id>`, `tenant:<name>`) and when (ISO 8601). */
  readonly by?: string;
  readonly at?: string;
}

/** What a session's log says of its skills. */
export interface SkillsState {
  /** Every active skill (once each; an explicit activation wins over routing), in the order they became active. */
  readonly active: readonly ActiveSkill[];
  /** Accepted outputs, per skill, oldest first. */
  readonly outputs: ReadonlyMap<string, readonly SkillOutput[]>;
  /** Refused completions, oldest first. */
  readonly refusals: readonly SkillRefusal[];
}

/** Folds a session's events (in log order) into its skills' state. */
export function foldSkills(events: Iterable<EngineEvent>): SkillsState {
  const activated = new Map<string, number>();
  const outputs = new Map<string, SkillOutput[]>();
  const refusals: SkillRefusal[] = [];
  let routedTurn = -1;
  let routed: string[] = [];
  for (const event of events) {
    if (event.kind === "SKILL_ACTIVATED") {
      if (!activated.has(event.payload.skill)) activated.set(event.payload.skill, event.turn_id);
    } else if (event.kind === "SKILL_COMPLETED") {
      const { skill, agent_id, node } = event.payload;
      if (!event.payload.ok) {
        refusals.push({ skill, turn_id: event.turn_id, agent_id, issues: event.payload.issues ?? [] });
        continue;
      }
      // A completed skill is done: it is no longer active until activated again.
      activated.delete(skill);
      const list = outputs.get(skill) ?? [];
      list.push({ skill, output: event.payload.output, turn_id: event.turn_id, agent_id, ...(node ? { node } : {}) });
      outputs.set(skill, list);
    } else if ((event.kind === "AGENT_COMPLETED" || event.kind === "NODE_COMPLETED") && event.payload.skills) {
      if (event.turn_id !== routedTurn) {
        routedTurn = event.turn_id;
        routed = [];
      }
      for (const skill of event.payload.skills) if (!routed.includes(skill)) routed.push(skill);
    }
  }
  const active: ActiveSkill[] = [...activated].map(([skill, turn_id]) => ({ skill, via: "activated", turn_id }));
  for (const skill of routed) if (!activated.has(skill)) active.push({ skill, via: "routed", turn_id: routedTurn });
  return { active, outputs, refusals };
}

/**
 * The active skills with the session's own activations (the ledgers' `skills`) first: a skill
 * activated for the session is listed once, as `client`.
 */
export function withSessionActivations(
  active: readonly ActiveSkill[],
  activations: readonly SessionSkillActivation[],
): ActiveSkill[] {
  const pinned = activations.map(({ skill, by, at }): ActiveSkill => ({ skill, via: "client", by, at }));
  return [...pinned, ...active.filter((entry) => !activations.some((activation) => activation.skill === entry.skill))];
}

/** The accepted outputs of `skill`, oldest first (empty: none recorded). */
export function skillOutputs(events: Iterable<EngineEvent>, skill: string): SkillOutput[] {
  return [...(foldSkills(events).outputs.get(skill) ?? [])];
}

/**
 * The outputs a skill consumes: for each skill its `consumes` names, in that
 * order, its accepted outputs, oldest first (an empty list: none recorded yet).
 */
export function consumedOutputs(
  events: Iterable<EngineEvent>,
  consumes: readonly string[],
): Record<string, SkillOutput[]> {
  const { outputs } = foldSkills(events);
  return Object.fromEntries(consumes.map((skill) => [skill, [...(outputs.get(skill) ?? [])]]));
}
