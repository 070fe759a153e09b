import type { z } from "zod";
import type { AgentAnswer, AgentRequest, AgentStreamPart, Contribution } from "../contracts/agent.ts";
import { AgentStreamName } from "../contracts/agent.ts";
import { describeIssues } from "../contracts/issues.ts";
import type { ChatModel } from "../contracts/model.ts";
import type { Usage } from "../contracts/usage.ts";
import { addUsage } from "../contracts/usage.ts";
import { ConclaveError } from "../errors.ts";
import { type SessionLedgers, unavailableLedgers } from "../ledgers/clients.ts";
import { OfflineToolModel } from "../llm/offlineModel.ts";
import type { AgentSkill, SkillCatalog } from "../skills/agentSkills.ts";
import { agentSkillsView } from "../skills/agentSkillsView.ts";
import { inAgentSpan } from "../telemetry/genAiSpans.ts";
import { tracingActive } from "../telemetry/tracer.ts";
import {
  type AgentTools,
  type AskGate,
  agentDelegation,
  agentTools,
  callRefOf,
  type DelegationDepthError,
} from "./agentTools.ts";
import type { AgentDefinition, AgentModel, AgentReviseContext } from "./defineAgent.ts";
import { durableModel, type RecordStep } from "./durableModel.ts";
import type { AgentIdentity } from "./identityFile.ts";

/** An agent answered with something its own output schema, or the council contract, rejects. */
export class InvalidAgentOutputError extends ConclaveError<"invalid_agent_output"> {
  readonly agentId: string;
  constructor(agentId: string, where: string, error: z.ZodError) {
    const issues = describeIssues(error, { limit: 5, join: "; " });
    super("invalid_agent_output", `agent ${agentId} answered an output ${where} rejects: ${issues}`);
    this.agentId = agentId;
  }
}

export interface RunAgentOptions {
  /** The configured model; absent in the offline mode. */
  model?: ChatModel | undefined;
  signal: AbortSignal;
  /** Receives the agent's stream parts as it produces them. */
  onStream?: (part: AgentStreamPart) => void;
  /** Asks the runner for the agent's tool calls (absent: `ctx.tools` offers none). */
  askGate?: AskGate;
  /** The session's ledgers for `ctx.ledgers`, made on first use (absent: every call rejects with `unavailable`). */
  ledgers?: () => SessionLedgers;
  /**
   * The skills a user message loads (the worker's skills directory), then those of `active` (the
   * request's `active_skills`) it did not, for `ctx.skills`; the answer then names them. Absent: the
   * agent gets none and the answer names none.
   */
  skills?: (
    message: string,
    onUsage?: (usage: Usage) => void,
    active?: readonly string[],
  ) => Promise<readonly AgentSkill[]>;
  /** The skills `ctx.skills.activate` and `complete` may name (absent: they reject with `not_found`). */
  skillCatalog?: SkillCatalog;
  /** The agent's identity file (identityFile.ts), read where the agent is hosted; absent: none. */
  identity?: (agentId: string) => AgentIdentity | null;
}

/**
 * Answers one agent request where the agent is hosted (a worker, or the
 * in-process engine): builds the agent's context, runs it, checks the answer
 * against the agent's schema and derives its contribution. Streams the agent
 * opened are closed when it returns, whether it succeeded or not.
 */
export type { AgentAnswer };

export function runAgent(
  agent: AgentDefinition,
  request: AgentRequest,
  options: RunAgentOptions,
): Promise<AgentAnswer> {
  // Traced, the run is an `invoke_agent <agent>` span (GenAI conventions); its model calls are its children.
  if (tracingActive())
    return inAgentSpan(agent.manifest.id, request, options.model, () => answerAgent(agent, request, options));
  return answerAgent(agent, request, options);
}

async function answerAgent(
  agent: AgentDefinition,
  asked: AgentRequest,
  options: RunAgentOptions,
): Promise<AgentAnswer> {
  const id = agent.manifest.id;
  // The agent's identity file goes first into its own context (its identity_persona zone).
  const identity = options.identity?.(id) ?? null;
  const request = identity ? { ...asked, context: { ...asked.context, identity: identity.text } } : asked;
  let usage: Usage | undefined;
  const count = (used: Usage) => {
    usage = usage ? addUsage(usage, used) : used;
  };
  const steps = durableSteps(request, options);
  /** A delegation refused for its depth: it fails this call whatever the agent does with the error. */
  const hard: { error?: DelegationDepthError } = {};
  let tools: AgentTools | undefined;
  let ledgers: SessionLedgers | undefined;
  let delegate: ((to: string, message: string) => Promise<unknown>) | undefined;
  const signal = steps.signal;
  const open = new Set<string>();
  const emit = (part: Omit<AgentStreamPart, "session_id" | "turn_id" | "agent_id">) =>
    options.onStream?.({ session_id: request.session_id, turn_id: request.turn_id, agent_id: id, ...part });
  const stream = (...args: [string, string, { contentType?: string }?] | [string]) => {
    // A stream left unnamed is `default` (text/plain), as the multiplexed-stream convention says.
    const [name, delta, streamOptions = {}] = args.length === 1 ? ["default", args[0]] : args;
    if (signal.aborted) return;
    const checked = AgentStreamName.safeParse(name);
    if (!checked.success)
      throw new TypeError(
        `agent ${id}: stream name '${name}': ${describeIssues(checked.error, { root: "", join: "; " })}`,
      );
    if (!open.has(name)) {
      open.add(name);
      emit({ stream: name, type: "start", content_type: streamOptions.contentType ?? "text/plain" });
    }
    if (delta !== "") emit({ stream: name, type: "chunk", delta });
  };
  // The routing's embeddings call, when this request made it: the turn counts it (skills:routing).
  let routing: Usage | undefined;
  const skills = options.skills
    ? await options.skills(
        request.context.user_message,
        (used) => {
          routing = routing ? addUsage(routing, used) : used;
        },
        // The skills activated for the session, or declared by the recipe: given whatever the message routes to.
        request.active_skills,
      )
    : undefined;
  const lifecycle = agentSkillsView(skills ?? [], options.skillCatalog);
  // What the reply names: the skills loaded, and those the agent activated and completed.
  const loaded = () => ({
    ...(skills ? { skills: skills.map((skill) => skill.id) } : {}),
    ...(routing ? { routing_usage: routing } : {}),
    ...(identity ? { identity: { path: identity.path, sha256: identity.sha256 } } : {}),
    ...lifecycle.report(),
  });
  const ctx: AgentReviseContext = {
    agentId: id,
    sessionId: request.session_id,
    turnId: request.turn_id,
    wave: request.wave,
    round: request.round,
    input: request.context,
    memory: {
      episodes: request.context.episodes,
      userFacts: request.context.user_facts ?? [],
      openThreads: request.context.open_threads ?? [],
      procedures: request.context.procedures ?? [],
      persona: request.context.persona ?? null,
      ledgers: request.context.ledgers ?? null,
      working: request.context.working_memory ?? null,
    },
    knowledge: request.context.knowledge ?? [],
    // The offline mode has no model for the agent itself (the offline tool model serves only ctx.tools.run).
    model: options.model && steps.model ? agentModel(steps.model, agent, request, signal, count) : undefined,
    stream,
    signal,
    skills: lifecycle.skills,
    delegate: (to, message) => {
      delegate ??= agentDelegation(request, steps.ask, hard);
      return delegate(to, message);
    },
    // Built on first use: most agent calls (every pipeline turn's) never touch their tools.
    get tools() {
      tools ??= agentTools(request, {
        ask: steps.ask,
        model: steps.model ?? new OfflineToolModel(),
        signal,
        maxTokens: agent.manifest.token_budget,
        count,
      });
      return tools;
    },
    get ledgers() {
      ledgers ??= options.ledgers?.() ?? unavailableLedgers(request.session_id);
      return ledgers;
    },
    ...(request.recipe ? { recipe: request.recipe } : {}),
  };
  try {
    if (request.mode === "revise")
      return { contribution: await agent.revise(ctx), ...(usage ? { usage } : {}), ...loaded() };
    const answer = await agent.run(ctx);
    if (hard.error) throw hard.error;
    const output = agent.output.safeParse(answer);
    if (!output.success) throw new InvalidAgentOutputError(id, "its output schema", output.error);
    let contribution: Contribution;
    try {
      contribution = agent.contribute(output.data);
    } catch (error) {
      if (error instanceof Error && error.name === "ZodError")
        throw new InvalidAgentOutputError(id, "the council contract", error as z.ZodError);
      throw error;
    }
    // An agent whose output is the council contract itself (the built-in ones) sends it once, as its contribution.
    const answered: AgentAnswer = agent.manifest.output_schema
      ? { output: output.data, contribution }
      : { contribution };
    if (usage) answered.usage = usage;
    return { ...answered, ...loaded() };
  } finally {
    for (const name of open) emit({ stream: name, type: "end" });
  }
}

/**
 * The agent call's link to the runner running its turn, when it has one
 * (`tool_subject`): its model calls become durable steps (replayed from
 * `request.replay`, else made and recorded before the agent goes on), and
 * losing the runner (no answer on the subject) aborts the call, since
 * nothing it does could be recorded any more.
 */
function durableSteps(request: AgentRequest, options: RunAgentOptions) {
  const base = options.askGate;
  if (!base) return { signal: options.signal, ask: undefined, model: options.model };
  const lost = new AbortController();
  const ask: AskGate = async (asked) => {
    try {
      return await base(asked);
    } catch (error) {
      lost.abort(error);
      throw error;
    }
  };
  const recordStep: RecordStep = async (step) => {
    await ask({
      kind: "model_step",
      ...callRefOf(request),
      ...step,
    });
  };
  return {
    signal: AbortSignal.any([options.signal, lost.signal]),
    ask,
    model: durableModel(options.model ?? new OfflineToolModel(), request.replay?.model ?? [], recordStep),
  };
}

/** The model as one agent call sees it: its caller name, budget, deadline and signal filled in, usage counted. */
function agentModel(
  model: ChatModel,
  agent: AgentDefinition,
  request: AgentRequest,
  signal: AbortSignal,
  count: (usage: Usage) => void,
): AgentModel {
  const caller = `agent:${agent.manifest.id}`;
  const limits = { signal, timeoutMs: request.timeout_ms, maxTokens: agent.manifest.token_budget };
  // Each call's usage names the model it ran on (cost prices it by that); the offline model costs nothing.
  const counted = (usage: Usage) => count(model.model === "offline" ? usage : { ...usage, model: model.model });
  return {
    name: model.model,
    structured: async ({ system, user, schema, schemaName }) => {
      const { value, usage } = await model.structured({
        caller,
        system,
        user,
        schema,
        schemaName: schemaName ?? "agent_output",
        ...limits,
      });
      counted(usage);
      return value;
    },
    text: async ({ system, user, onDelta }) => {
      const parts = model.stream({ caller, system, user, ...limits });
      let text = "";
      for await (const part of parts) {
        if (part.type !== "content" || part.delta === "") continue;
        text += part.delta;
        onDelta?.(part.delta);
      }
      counted(await parts.usage);
      return text;
    },
  };
}
