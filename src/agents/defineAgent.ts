import { z } from "zod";
import { checkedCardUrl } from "../a2a/remoteAgents.ts";
import {
  type AgentContext,
  AgentManifest,
  type AgentPriority,
  Contribution,
  type RecipeCallContext,
} from "../contracts/agent.ts";
import { describeIssues } from "../contracts/issues.ts";
import type { KnowledgePassage } from "../contracts/knowledge.ts";
import type { LedgerDigest } from "../contracts/ledger.ts";
import type { WorkingMemoryView } from "../contracts/workingMemory.ts";
import type { Episode } from "../contracts/workspace.ts";
import { ConclaveError, messageOf } from "../errors.ts";
import type { SessionLedgers } from "../ledgers/clients.ts";
import type { AgentSkills } from "../skills/agentSkillsView.ts";
import { type AgentModelChoice, type AgentModelSpec, parseAgentModel } from "./agentModelChoice.ts";
import type { AgentTools } from "./agentTools.ts";
import { contributionOf } from "./contributionOf.ts";

/** Marks a value as an agent definition, across copies of the package (a user's module may import another). */
const AGENT_BRAND = Symbol.for("conclave.agent");

/** Raised by `defineAgent` for a definition that cannot run: the message names the field. */
export class AgentDefinitionError extends ConclaveError<"invalid_agent"> {
  constructor(message: string) {
    super("invalid_agent", message);
  }
}

/**
 * The configured OpenAI-compatible model, as an agent sees it. Calls are
 * bounded by the agent's token budget and its request's deadline, stopped by
 * the request's AbortSignal, and counted in the turn's usage.
 */
export interface AgentModel {
  /** The model id in use. */
  readonly name: string;
  /** One answer validated by `schema` (structured output; an invalid answer is retried once). */
  structured<S extends z.ZodType>(request: {
    system: string;
    user: string;
    schema: S;
    /** The json_schema name sent to the server. Default: `agent_output`. */
    schemaName?: string;
  }): Promise<z.infer<S>>;
  /** Free text, streamed: each piece goes to `onDelta` as it arrives. Resolves to the whole text. */
  text(request: { system: string; user: string; onDelta?: (delta: string) => void }): Promise<string>;
}

/** What the session's memory holds for this turn. */
export interface AgentMemoryView {
  /** Recent episodes of the session (user message and reply). */
  readonly episodes: readonly Episode[];
  /** What the memory knows of the user. */
  readonly userFacts: readonly string[];
  /** Threads left open in earlier turns. */
  readonly openThreads: readonly string[];
  /**
   * How the user wants to be answered, as they said it ("Keep answers short",
   * "Answer in Spanish"): procedural memory's applied instructions, most
   * recently taught first.
   */
  readonly procedures: readonly string[];
  /**
   * The persona memory evolved for the session (its traits, strongest first), as the context
   * arena kept it within the `identity_persona` zone's budget; null while it has none.
   */
  readonly persona: string | null;
  /**
   * The session's truth and task ledgers in short (active facts, the task's
   * goal, open items and blockers); null when both are empty.
   */
  readonly ledgers: LedgerDigest | null;
  /**
   * The session's working memory (docs/knowledge.md, "Working memory"): its version and content, as
   * it stands when the agent is asked; null when the runner declares none. An agent that lists the
   * `update_working_memory` tool in its `tools` changes it with `ctx.tools.call("update_working_memory", fields)`.
   */
  readonly working: WorkingMemoryView | null;
}

/** Everything an agent's `run` is given. */
export interface AgentRunContext {
  readonly agentId: string;
  readonly sessionId: string;
  readonly turnId: number;
  /** The wave this call belongs to (0 for always-on agents). */
  readonly wave: number;
  /** The turn as the agent sees it: the user's message, sensors, modulators, stance, claims so far. */
  readonly input: AgentContext;
  readonly memory: AgentMemoryView;
  /**
   * Passages of the knowledge collections the agent names (`knowledge`, in the pipeline) or its
   * recipe node names (`knowledge:`), found for the user's message, best first, kept within the
   * context's `rag_external` budget (docs/knowledge.md). Each carries its citation: collection,
   * document, chunk, character offset and heading. Empty when none is named or none passes.
   */
  readonly knowledge: readonly KnowledgePassage[];
  /**
   * The agent's model (its own, when its definition names one, else the worker's); `undefined` in the
   * deterministic offline mode, where the agent answers on its own.
   */
  readonly model: AgentModel | undefined;
  /**
   * Streams a piece of text on the agent's stream `name` (opened on first
   * use, closed when `run` returns; content type `text/plain` unless given).
   * It appears in the turn's events as STREAM_START / STREAM_CHUNK /
   * STREAM_END with stream id `<agent_id>:<name>` (`<node>:<name>` in a
   * recipe). Given only the text, the stream is `default`.
   */
  stream(name: string, delta: string, options?: { contentType?: string }): void;
  /** Streams a piece of text on the `default` stream (text/plain). */
  stream(delta: string): void;
  /** Fires when the turn no longer wants the answer: deadline, cancellation, interrupt. */
  readonly signal: AbortSignal;
  /**
   * The skills the user's message loads, from the worker's skills directory (`conclave worker
   * --skills DIR`; docs/skills.md): eager ones, lazy ones whose trigger intent is close to the
   * message, user ones it names. Empty on a worker without skills. The reply names them
   * (`AGENT_COMPLETED.payload.skills`). `ctx.skills.activate(id)` activates any skill of the
   * directory and `ctx.skills.complete(id, output)` completes one, its output checked against
   * the skill's `output_schema`; the runner records both on the session's log (SKILL_ACTIVATED,
   * SKILL_COMPLETED).
   */
  readonly skills: AgentSkills;
  /** The tools this call may use, under the runner's policy: its definition's `tools` in the pipeline, a node's in a recipe. */
  readonly tools: AgentTools;
  /**
   * Hands part of the work to another agent (one its recipe definition lists
   * in `delegates`), through the runner: resolves to that agent's output.
   * Deeper than the policy's `max_delegation_depth` (default 3) it rejects
   * with DelegationDepthError, and this call fails even if the error is caught.
   */
  delegate(to: string, message: string): Promise<unknown>;
  /**
   * The session's truth and task ledgers, to read and write (the client API's
   * `truth` and `task`, for this session): a change is recorded on the
   * session's log as made by `agent:<id>`. Writing the same thing again
   * changes nothing, so an agent run again after a crash does not duplicate
   * its entries. Where no runner keeps them (an agent run in-process), every
   * call rejects with `unavailable`.
   */
  readonly ledgers: SessionLedgers;
  /**
   * Set when a recipe's node calls the agent: the recipe and node, the node's named inputs, its
   * system prompt, and an evaluator's feedback on the previous attempt. `input.user_message` then
   * holds the inputs as text with the feedback appended.
   */
  readonly recipe?: RecipeCallContext;
}

/** What an agent is asked in a deliberation round: reconsider the contested claims in `input.claims`. */
export interface AgentReviseContext extends AgentRunContext {
  /** The deliberation round (from 1). */
  readonly round: number;
}

/** How an agent wants to be scheduled. */
export interface AgentScheduling {
  /**
   * `ALWAYS_ON`: runs first in every turn. `MONITOR`: a candidate every turn
   * with a base score. `SCHEDULED` (default): a candidate when one of its
   * triggers (or, for a built-in agency, that agency's sensor) fires.
   */
  priority?: AgentPriority;
  /** Sensor names whose score above 0.3 make the agent a candidate (see docs/SENSORS.md). Default: none. */
  triggers?: readonly string[];
  /** Seconds after running before it may run again in the same session. Default 0. */
  cooldownSeconds?: number;
  /** Its cost: most tokens one answer may use, counted against the turn's token budget. Default 600. */
  tokenBudget?: number;
}

/** What `defineAgent` takes. */
export interface AgentSpec<S extends z.ZodType> extends AgentScheduling {
  /** The agent's id: 1-3 lowercase tokens joined by dots, e.g. `acme.weather`. Served on `conclave.agent.<name>`. */
  name: string;
  /** One line on what it is for (shown in discovery, and to a model council). */
  description: string;
  /**
   * A free label, one lowercase word; the built-in agencies (`emotion`, `reasoning`, `social`,
   * `planning`, `inhibition`, `monitoring`) also get the scheduler's sensor boosts. Announced as the
   * manifest's `agency`. Default: the name's first token (`acme` for `acme.weather`), or
   * `custom` for a one-token name.
   */
  agency?: string;
  /** The zod schema of the agent's answer: checked on the worker and again on the runner. */
  output: S;
  /**
   * The model this agent thinks with (`ctx.model`), when not the worker's: a model name on the
   * worker's LLM server, or `{ name, baseUrl, apiKeyEnv }` for another server (see
   * {@link AgentModelChoice}). Announced in its manifest (`model`). Default: the worker's model.
   */
  model?: AgentModelChoice;
  /**
   * The tools it may call (`ctx.tools`) when the built-in pipeline schedules it: names of tools
   * a worker hosts (its own, or an MCP server's). Each call goes through the runner, under its
   * tool policy: a write of high risk waits for a person's approval, the turn suspended meanwhile.
   * Default: none. A recipe node offers its own list instead.
   */
  tools?: readonly string[];
  /**
   * The agents it may hand work to (`ctx.delegate`) in the pipeline: agent ids, or remote A2A
   * agents as `{ name, a2a }` (`name` an agent id to delegate to, `a2a` the agent card's
   * http(s) URL, `a2a+` prefix allowed). Default: none.
   */
  delegates?: readonly (string | RemoteDelegate)[];
  /**
   * The knowledge collections (`conclave knowledge add … --collection C`) its context is searched
   * in when the pipeline asks it: the runner searches them, as the turn's tenant, for the user's
   * message and gives the passages that pass the `rag_external` gating in `ctx.knowledge` (and, for
   * the built-in LLM prompt, in its context's Knowledge section), with their citations. At most 16.
   * Default: none, and nothing is searched. A recipe node names its own (`knowledge:`).
   */
  knowledge?: readonly string[];
  /**
   * Answers one turn with a value `output` accepts (defaults are filled in by
   * `output`). Throwing, or an answer `output` rejects, fails this agent
   * only: the turn goes on and names it in its warnings.
   */
  run(ctx: AgentRunContext): NoInfer<Promise<z.input<S>> | z.input<S>>;
  /**
   * Maps the answer to what the council takes from it. Default: the
   * answer's fields named as in `Contribution` (claims, proposals, supports,
   * opposes, stance_delta...), so an output schema that has none contributes
   * nothing but still appears in the turn's events.
   */
  contribute?(output: NoInfer<z.infer<S>>): Partial<Contribution>;
  /** Reconsiders contested claims in a deliberation round. Default: `reviseByMajority`. */
  revise?(ctx: AgentReviseContext): Promise<Partial<Contribution>> | Partial<Contribution>;
}

/** An agent, ready for `startWorker({ agents })`. Create it with `defineAgent`. */
export interface AgentDefinition<S extends z.ZodType = z.ZodType> {
  /** What workers announce about it: id, agency, scheduling facts, the JSON Schema of its output. */
  readonly manifest: AgentManifest;
  /** The schema its answers must satisfy. */
  readonly output: S;
  /** The model it asks for (AgentSpec.model); absent: the worker's. */
  readonly model?: AgentModelSpec;
  /** Answers one turn (see AgentSpec.run). */
  run(ctx: AgentRunContext): Promise<z.input<S>> | z.input<S>;
  /** What the council takes from an answer. */
  contribute(output: z.infer<S>): Contribution;
  /** Reconsiders contested claims in a deliberation round. */
  revise(ctx: AgentReviseContext): Promise<Contribution>;
}

/** The type of an agent's answers: `AgentOutputOf<typeof myAgent>`. */
export type AgentOutputOf<A> = A extends AgentDefinition<infer S> ? z.infer<S> : never;

/** An output with nothing to say: the starting point of most rule paths. */
export const quietOutput = (): Contribution => ({
  claims: [],
  supports: [],
  opposes: [],
  withdraws: [],
  concedes: [],
  proposals: [],
  stance_delta: {},
});

/**
 * The default way an agent reconsiders in a deliberation round: it takes back
 * its own claims that more agents oppose than support, and stops opposing
 * claims that at least twice as many agents support.
 */
export function reviseByMajority(context: Pick<AgentContext, "claims">, agentId: string): Contribution {
  const output = quietOutput();
  for (const claim of context.claims) {
    if (claim.source === agentId && claim.opposition.length > claim.support.length) output.withdraws.push(claim.id);
    if (claim.opposition.includes(agentId) && claim.support.length >= 2 * claim.opposition.length)
      output.concedes.push(claim.id);
  }
  return output;
}

/**
 * Defines an agent: what it is, how it wants to be scheduled, the schema of
 * its answers and how it answers. The definition is checked at once, so a
 * bad agent file fails when it is loaded, naming the field.
 *
 * @example
 * ```ts
 * export const forecaster = defineAgent({
 *   name: "acme.forecaster",
 *   description: "Says whether the user's plans need an umbrella.",
 *   triggers: ["advice_requested"],
 *   output: z.object({ umbrella: z.boolean(), proposals: z.array(z.object({ kind: z.literal("say"), text: z.string() })) }),
 *   run: ({ input }) => ({ umbrella: /rain/i.test(input.user_message), proposals: [] }),
 * });
 * ```
 */
export function defineAgent<S extends z.ZodType>(spec: AgentSpec<S>): AgentDefinition<S> {
  if (typeof spec !== "object" || spec === null) throw new AgentDefinitionError("defineAgent takes an object");
  if (typeof spec.run !== "function")
    throw new AgentDefinitionError(`agent '${String(spec.name)}': run must be a function`);
  if (!(spec.output instanceof z.ZodType))
    throw new AgentDefinitionError(`agent '${String(spec.name)}': output must be a zod schema`);
  // `role` was renamed `agency`: refused, since ignoring it would silently change how the agent is scheduled.
  if ("role" in spec)
    throw new AgentDefinitionError(`agent '${String(spec.name)}': \`role\` is now \`agency\` (as in its manifest)`);
  const model = spec.model === undefined ? undefined : parseAgentModel(spec.model);
  if (model && "problem" in model) throw new AgentDefinitionError(`agent '${String(spec.name)}': ${model.problem}`);
  const tokens = typeof spec.name === "string" ? spec.name.split(".") : [];
  const agency = spec.agency ?? (tokens.length > 1 ? tokens[0] : "custom");
  let outputSchema: Record<string, unknown> | undefined;
  try {
    outputSchema =
      spec.output === (Contribution as z.ZodType) ? undefined : z.toJSONSchema(spec.output, { io: "output" });
  } catch (error) {
    throw new AgentDefinitionError(
      `agent '${String(spec.name)}': its output schema has no JSON Schema (${messageOf(error)}); use plain data types`,
    );
  }
  const manifest = AgentManifest.safeParse({
    id: spec.name,
    agency,
    priority: spec.priority ?? "SCHEDULED",
    triggers: [...(spec.triggers ?? [])],
    cooldown_s: spec.cooldownSeconds ?? 0,
    token_budget: spec.tokenBudget ?? 600,
    description: spec.description,
    ...(outputSchema ? { output_schema: outputSchema } : {}),
    ...(model ? { model: model.spec.name } : {}),
    ...(spec.tools?.length ? { tools: [...new Set(spec.tools)] } : {}),
    ...delegatesOf(spec),
    ...(spec.knowledge?.length ? { knowledge: [...new Set(spec.knowledge)] } : {}),
  });
  if (!manifest.success)
    throw new AgentDefinitionError(
      `agent '${String(spec.name)}' is invalid: ${describeIssues(manifest.error, { join: "; " })}`,
    );
  const contribute = spec.contribute;
  const revise = spec.revise;
  const definition: AgentDefinition<S> = {
    manifest: manifest.data,
    output: spec.output,
    ...(model ? { model: Object.freeze(model.spec) } : {}),
    run: (ctx) => spec.run(ctx),
    contribute: (output) => (contribute ? Contribution.parse(contribute(output)) : contributionOf(output)),
    revise: async (ctx) =>
      revise ? Contribution.parse(await revise(ctx)) : reviseByMajority(ctx.input, manifest.data.id),
  };
  Object.defineProperty(definition, AGENT_BRAND, { value: true });
  return Object.freeze(definition);
}

/** A remote A2A agent a pipeline agent may delegate to (`defineAgent`'s `delegates`). */
export interface RemoteDelegate {
  /** The agent id it is asked by (`ctx.delegate(name, message)`). */
  name: string;
  /** Its agent card's URL: `https://host/.well-known/agent-card.json` (or with the `a2a+` prefix). */
  a2a: string;
}

/** The manifest's `delegates` and `remote_delegates` from a definition's list; a bad card URL is refused. */
function delegatesOf(spec: { name: string; delegates?: readonly (string | RemoteDelegate)[] }) {
  if (!spec.delegates?.length) return {};
  const remote: Record<string, { card_url: string }> = {};
  const names = spec.delegates.map((delegate) => {
    if (typeof delegate === "string") return delegate;
    const url = typeof delegate?.a2a === "string" ? delegate.a2a.replace(/^a2a\+/, "") : "";
    const checked = checkedCardUrl(url);
    if ("problem" in checked)
      throw new AgentDefinitionError(
        `agent '${String(spec.name)}': delegate '${String(delegate?.name)}': ${checked.problem}`,
      );
    remote[delegate.name] = { card_url: checked.url };
    return delegate.name;
  });
  return { delegates: [...new Set(names)], ...(Object.keys(remote).length > 0 ? { remote_delegates: remote } : {}) };
}

/** True for a value made by `defineAgent` (of any copy of the package). */
export function isAgentDefinition(value: unknown): value is AgentDefinition {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[AGENT_BRAND] === true;
}

/** True when `claims` holds a claim with this id. */
export const hasClaim = (claims: readonly { id: string }[], id: string): boolean =>
  claims.some((claim) => claim.id === id);
