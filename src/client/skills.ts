/**
 * Reading a session's skills from its log (docs/skills.md, "Skill
 * lifecycle"): the active ones, the outputs each recorded, and the outputs a
 * skill consumes. Every answer is a fold of the session's events
 * (src/skills/outputs.ts): nothing is kept beside the log.
 */

import type { NatsConnection } from "@nats-io/nats-core";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import { setting } from "../config/load.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { checkSessionId } from "../contracts/ids.ts";
import { LedgerReply, LedgerResults } from "../contracts/ledgerRequest.ts";
import { SkillId, type SkillsRefreshReply } from "../contracts/skill.ts";
import type { SessionSkillActivation, SessionSkillChange } from "../contracts/skillActivations.ts";
import { InvalidRequestError } from "../errors.ts";
import { type ComposePlanCheck, validateComposePlan } from "../skills/composePlan.ts";
import type { SkillDefinition } from "../skills/definition.ts";
import { loadSkills } from "../skills/load.ts";
import {
  type ActiveSkill,
  consumedOutputs,
  foldSkills,
  type SkillOutput,
  skillOutputs,
  withSessionActivations,
} from "../skills/outputs.ts";

/** Where `getConsumedOutputs` learns which skills a skill consumes. */
export interface ConsumedOutputsOptions {
  /** The skills directory holding the target skill. Default: CONCLAVE_SKILLS_DIR, else `./skills`. */
  dir?: string;
  /** The skills it consumes, given directly (then no directory is read). */
  consumes?: readonly string[];
}

/** Where `validateComposePlan` finds the skills a plan names. */
export interface ComposePlanOptions {
  /** The skills directory. Default: CONCLAVE_SKILLS_DIR, else `./skills`. */
  dir?: string;
  /** The skills, given directly (then no directory is read). */
  skills?: readonly Pick<SkillDefinition, "id" | "consumes">[];
}

/** A session's skills, read from its log; and compose plans, checked against a skills directory. */
export interface SkillsClient {
  /**
   * The skills active in the session: those activated for it (`via: "client"`, with who asked), those an
   * agent activated and nobody completed since, and those loaded in its latest turn. Asks a runner for the
   * session's activations (rejects with `no_responders` when none is up).
   */
  getActive(sessionId: string): Promise<ActiveSkill[]>;
  /**
   * Activates a skill for the session (docs/skills.md, "Activating a skill for a session"): recorded on its
   * log (SESSION_SKILL_ACTIVATED, with who asked), and from its next turn on every agent on a worker with
   * that skill is given it in `ctx.skills`, whatever the message routes to, until it is deactivated or an
   * agent completes it. Resolves `{ skill, active: true, changed }` (`changed` false: it already was).
   * A bad session or skill id rejects with `invalid_request` before anything is sent; a 33rd activation
   * with `conflict`.
   */
  activate(sessionId: string, skill: string): Promise<SessionSkillChange>;
  /** Ends a skill's activation for the session (SESSION_SKILL_DEACTIVATED); `changed` false: it was not active. */
  deactivate(sessionId: string, skill: string): Promise<SessionSkillChange>;
  /** The outputs recorded for `skill` (accepted completions only), oldest first; empty when none. */
  getOutputs(sessionId: string, skill: string): Promise<SkillOutput[]>;
  /**
   * The outputs of the skills `targetSkill` declares it consumes (its `consumes` field), by skill in that
   * order, each list oldest first. Rejects with `invalid_request` for a skill the directory does not have.
   */
  getConsumedOutputs(
    sessionId: string,
    targetSkill: string,
    options?: ConsumedOutputsOptions,
  ): Promise<Record<string, SkillOutput[]>>;
  /**
   * Checks a compose plan (skill ids in the order they run): valid when every skill exists and every
   * skill one consumes (its `consumes` field) is an earlier step. Resolves with every problem, each
   * naming the step, the skill and the missing input; rejects with `invalid_request` for a plan that is
   * not a list of skill ids, or a skills directory that cannot be read.
   */
  validateComposePlan(plan: readonly string[], options?: ComposePlanOptions): Promise<ComposePlanCheck>;
  /**
   * Has every worker with skills re-read its skills directory (through a runner): one report per worker
   * that answered, with the skill ids added, removed and changed; a worker whose directory no longer loads
   * (a bad skill file) reports the one-line `error` and keeps its skills as they were. A worker's next
   * agent request routes over the refreshed skills. Rejects with `no_responders` when no runner is up.
   */
  refresh(): Promise<SkillsRefreshReply>;
}

/** The most steps a compose plan may have. */
export const MAX_COMPOSE_PLAN_STEPS = 256;

/** Checks a compose plan against `options`' skills, or its directory's (one line naming what is wrong). */
export function checkComposePlan(plan: unknown, options: ComposePlanOptions = {}): ComposePlanCheck {
  if (!Array.isArray(plan) || plan.some((step) => typeof step !== "string"))
    throw new InvalidRequestError("a compose plan is a list of skill ids");
  if (plan.length > MAX_COMPOSE_PLAN_STEPS)
    throw new InvalidRequestError(`a compose plan has at most ${MAX_COMPOSE_PLAN_STEPS} steps, not ${plan.length}`);
  const skills =
    options.skills ??
    loadSkills(options.dir ?? setting(process.env, "CONCLAVE_SKILLS_DIR") ?? "skills").map((skill) => skill.definition);
  return validateComposePlan(plan, skills);
}

/** Which skills `target` consumes, from `options` or its directory (one line naming what is wrong). */
export function consumesOf(target: string, options: ConsumedOutputsOptions = {}): readonly string[] {
  if (options.consumes) return options.consumes;
  const dir = options.dir ?? setting(process.env, "CONCLAVE_SKILLS_DIR") ?? "skills";
  const skill = loadSkills(dir).find((candidate) => candidate.definition.id === target);
  if (!skill) throw new InvalidRequestError(`no skill ${JSON.stringify(target).slice(0, 80)} in ${dir}`);
  return skill.definition.consumes ?? [];
}

/** How the skills client reaches a session's activations: the ledgers' requests, through a runner. */
export interface SessionSkillsLedger {
  /** `skills.activate` or `skills.deactivate`. */
  change(sessionId: string, op: "skills.activate" | "skills.deactivate", skill: string): Promise<SessionSkillChange>;
  /** The session's activations, oldest first (the ledgers' state). */
  activations(sessionId: string): Promise<SessionSkillActivation[]>;
}

/** The session's activations over a connection: ledger requests on `conclave.ledger.<session>`, answered by a runner. */
export function sessionSkillsLedger(nc: NatsConnection, timeoutMs: number): SessionSkillsLedger {
  const ask = (sessionId: string, body: Record<string, unknown>) =>
    requestJson(nc, subjects.ledger(sessionId), { session_id: sessionId, ...body }, LedgerReply, { timeoutMs });
  return {
    change: async (sessionId, op, skill) => LedgerResults[op].parse((await ask(sessionId, { op, skill })).result),
    activations: async (sessionId) =>
      LedgerResults["ledgers.state"].parse((await ask(sessionId, { op: "ledgers.state" })).result).skills,
  };
}

const noRunner = async (): Promise<never> => {
  throw new InvalidRequestError("this skills client cannot reach a runner");
};

/** A skill id as `activate` and `deactivate` take it, checked (one line naming what is wrong). */
export function checkSkillId(skill: unknown): string {
  const parsed = SkillId.safeParse(skill);
  if (!parsed.success)
    throw new InvalidRequestError(
      `bad skill id ${JSON.stringify(skill)?.slice(0, 80)}: ${parsed.error.issues[0]?.message ?? "not a skill id"}`,
    );
  return parsed.data;
}

/** The skills client over a reader of a session's events, a runner's skills refresh, and the session's activations. */
export function skillsClient(
  events: (sessionId: string) => Promise<EngineEvent[]>,
  refresh: () => Promise<SkillsRefreshReply> = noRunner,
  ledger: SessionSkillsLedger = { change: noRunner, activations: noRunner },
): SkillsClient {
  const read = (sessionId: string) => {
    checkSessionId(sessionId);
    return events(sessionId);
  };
  return {
    getActive: async (sessionId) => {
      const [events, activations] = await Promise.all([read(sessionId), ledger.activations(sessionId)]);
      return withSessionActivations(foldSkills(events).active, activations);
    },
    activate: async (sessionId, skill) => {
      checkSessionId(sessionId);
      return ledger.change(sessionId, "skills.activate", checkSkillId(skill));
    },
    deactivate: async (sessionId, skill) => {
      checkSessionId(sessionId);
      return ledger.change(sessionId, "skills.deactivate", checkSkillId(skill));
    },
    getOutputs: async (sessionId, skill) => skillOutputs(await read(sessionId), skill),
    getConsumedOutputs: async (sessionId, targetSkill, options) => {
      checkSessionId(sessionId);
      const consumes = consumesOf(targetSkill, options);
      return consumedOutputs(await read(sessionId), consumes);
    },
    validateComposePlan: async (plan, options) => checkComposePlan(plan, options),
    refresh,
  };
}
