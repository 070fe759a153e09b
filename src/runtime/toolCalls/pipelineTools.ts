import { type RemoteAgentRef, type RemoteAgents, remoteAgents } from "../../a2a/remoteAgents.ts";
import type { AgentDirectory } from "../../agents/directory.ts";
import type { GateState } from "../../context/budget.ts";
import type { AgentContext, AgentReply, AgentRequest } from "../../contracts/agent.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import type { HumanAnswer, JsonObject } from "../../contracts/recipeRun.ts";
import type { ToolManifest } from "../../contracts/tool.ts";
import { turnKey } from "../../contracts/turnKey.ts";
import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import { WORKING_MEMORY_TOOL } from "../../contracts/workingMemory.ts";
import type { ToolPolicy } from "../../tools/policy.ts";
import { delegatedRequest } from "../recipeHost/recipeActors.ts";
import { screenInputs } from "../recipeHost/screenInputs.ts";
import type { TurnInterceptor } from "../turnServices/turnInterceptor.ts";
import type { ApprovalAsked, TurnServices } from "../turnServices/turnServices.ts";
import { approvalOf, recordedToolSteps } from "./recordedToolSteps.ts";
import type { ToolGate } from "./toolGate.ts";
import type { TurnTools } from "./turnToolCalls.ts";
import type { WorkingMemory } from "./workingMemory.ts";

/** Where a pipeline turn's tool calls are recorded: the turn's log, as the runner writes it. */
export interface PipelineTurnLog {
  record(turn: { session_id: string; turn_id: number }, body: TurnRecord): void;
  flushed(turn: { session_id: string; turn_id: number }): Promise<void>;
  /** What earlier attempts stored of the turn (a takeover, or a suspension answered). */
  stored(sessionId: string, turnId: number): readonly EngineEvent[];
}

/** Most failed tool calls an agent is told of (`context.tool_failures`), newest first. */
const FAILURES_SHOWN = 20;

interface OpenPipelineTurn {
  allowed: Set<string>;
  delegates: Set<string>;
  /** The remote A2A agents among the delegates (cards fetched once per turn, on the first call to each). */
  remote: RemoteAgents;
  remoteRefs: Record<string, RemoteAgentRef>;
  /** Per agent call: who learns that one of its tool calls waits for approval. */
  listeners: Map<string, (asked: ApprovalAsked) => void>;
  /** `<tool>: <message>` of each call that failed or was refused in the turn, oldest first. */
  failures: string[];
  /** The tools this attempt's calls invoked (TOOL_CALL_FINISHED): its episode records them. */
  invoked: Set<string>;
  /** The context the turn's agents were last given: a delegated agent gets its memory. */
  context: AgentContext | null;
  /** The skills activated for the session the turn's agents were given: a delegated agent gets them too. */
  activeSkills?: string[];
  /** The budget of the turn's agent calls: a delegated call gets the same. */
  timeoutMs: number;
  abort: AbortController;
  close: () => void;
}

/**
 * Tools and delegation for the agents the built-in pipeline schedules: an
 * agent whose definition names `tools` or `delegates` is offered them in its
 * wave, through the runner's tool gate (the recipe runs' gate, policy and
 * durable steps). A call that needs approval suspends the turn (the wave's
 * `onApproval`); the turn runs again from its log once it is answered, its
 * recorded tool calls, model steps and delegations answered from there.
 */
export class PipelineTools {
  readonly #turns = new Map<string, OpenPipelineTurn>();
  /** Answers to a suspended turn's approval, until it runs again (they are in its log from then on). */
  readonly #answers = new Map<string, HumanAnswer>();
  /** Each running turn's context pressure, as its context stage planned it: the compaction gate's input. */
  readonly #pressure = new Map<string, GateState>();
  #directory: AgentDirectory | null = null;

  constructor(
    private readonly deps: {
      gate: ToolGate;
      directory: Promise<AgentDirectory>;
      policy: ToolPolicy;
      /** Per tool call; default the gate's. */
      timeoutMs?: number;
      /** The sessions' working memory, when the runner declares one: every agent reads it, those listing its tool change it. */
      workingMemory?: WorkingMemory;
    },
  ) {
    void deps.directory.then(
      (directory) => {
        this.#directory = directory;
      },
      () => {},
    );
  }

  /** A suspended pipeline turn was answered: its approval holds when it runs again. */
  answered(sessionId: string, turnId: number, answer: HumanAnswer): void {
    this.#answers.set(`${turnKey(sessionId, turnId)}`, answer);
  }

  /**
   * The turn's context stage planned (CONTEXT_PLANNED: its pressure) or compacted (CONTEXT_COMPACTED):
   * what the compaction gate of its agents' tool calls goes by.
   */
  observe(turn: { session_id: string; turn_id: number }, record: TurnRecord): void {
    if (record.kind !== "CONTEXT_COMPACTED" && record.kind !== "CONTEXT_PLANNED") return;
    const key = `${turnKey(turn.session_id, turn.turn_id)}`;
    if (record.kind === "CONTEXT_COMPACTED") {
      const known = this.#pressure.get(key);
      this.#pressure.set(key, { pressure: known?.pressure ?? record.payload.pressure, compacted: true });
    } else {
      const compacted = this.#pressure.get(key)?.compacted ?? false;
      this.#pressure.set(key, { pressure: record.payload.pressure, compacted });
    }
  }

  /** The turn ended (completed, suspended or crashed): calls in flight stop and record nothing more. */
  ended(sessionId: string, turnId: number): void {
    const key = `${turnKey(sessionId, turnId)}`;
    this.#answers.delete(key);
    this.#pressure.delete(key);
    const turn = this.#turns.get(key);
    if (!turn) return;
    this.#turns.delete(key);
    turn.abort.abort();
    turn.close();
  }

  /**
   * The interceptor offering wave agent calls their tools and delegates:
   * the request names the gate, the call's durable key and any model steps
   * recorded for it. Deliberation rounds (revise mode) get no tools.
   * `below` are the services beneath it: a tool call's arguments are
   * screened, and a delegated agent asked, through them. The turn's memory
   * commit gets the tools its calls invoked (the episode's `tools_invoked`).
   */
  interceptor(below: TurnServices, log: PipelineTurnLog): TurnInterceptor {
    const callAgent: TurnInterceptor["callAgent"] = async (given, next) => {
      const input = await this.#withWorkingMemory(given);
      const { request, onApproval } = input;
      const manifest =
        request.mode === "respond" && !request.recipe && !request.tool_subject
          ? (this.#directory ?? (await this.deps.directory)).manifest(request.agent_id)
          : undefined;
      const names = manifest?.tools ?? [];
      const delegates = manifest?.delegates ?? [];
      if (names.length === 0 && delegates.length === 0) return next(input);
      const directory = this.#directory ?? (await this.deps.directory);
      const turn = this.#open(below, log, request);
      for (const name of names) turn.allowed.add(name);
      for (const name of delegates) turn.delegates.add(name);
      Object.assign(turn.remoteRefs, manifest?.remote_delegates);
      turn.context = request.context;
      if (request.active_skills) turn.activeSkills = request.active_skills;
      const offered = names.flatMap((name): ToolManifest[] => {
        const tool = directory.tool(name) ?? this.#ownTool(name);
        return tool ? [tool] : [];
      });
      // The agent and its wave identify the call across a takeover or a resume: its finished steps are not made again.
      const callKey = `${request.agent_id}.w${request.wave}`;
      if (onApproval) turn.listeners.set(callKey, onApproval);
      const replay = this.deps.gate.replayOf(request.session_id, request.turn_id, callKey);
      const failures = turn.failures.slice(-FAILURES_SHOWN).reverse();
      try {
        return await next({
          ...input,
          request: {
            ...request,
            ...(failures.length > 0 ? { context: { ...request.context, tool_failures: failures } } : {}),
            tools: offered,
            tool_subject: this.deps.gate.subject,
            call_key: callKey,
            ...(delegates.length > 0 ? { delegates: [...delegates] } : {}),
            ...(replay.length > 0 ? { replay: { model: replay } } : {}),
          },
        });
      } finally {
        if (turn.listeners.get(callKey) === onApproval) turn.listeners.delete(callKey);
      }
    };
    // The turn's episode records the tools its calls invoked, in this attempt or an earlier one (its log).
    const commitMemory: TurnInterceptor["commitMemory"] = (input, next) => {
      const { episode } = input.request;
      const tools = this.#invoked(log, episode.session_id, episode.turn_id);
      if (tools.length === 0) return next(input);
      return next({ ...input, request: { ...input.request, episode: { ...episode, tools_invoked: tools } } });
    };
    return { callAgent, commitMemory };
  }

  /** A pipeline agent's call (not a recipe node's) given the session's working memory, when the runner declares one. */
  async #withWorkingMemory(input: Parameters<NonNullable<TurnInterceptor["callAgent"]>>[0]) {
    const memory = this.deps.workingMemory;
    const { request } = input;
    if (!memory || request.recipe) return input;
    const view = await memory.view(request.session_id, request.turn_id);
    return { ...input, request: { ...request, context: { ...request.context, working_memory: view } } };
  }

  /** A tool the runner itself answers: the working memory's update, when it declares one. */
  #ownTool(name: string): ToolManifest | undefined {
    return name === WORKING_MEMORY_TOOL ? this.deps.workingMemory?.manifest : undefined;
  }

  /** The session was erased: nothing of it is kept here. */
  forget(sessionId: string): void {
    this.deps.workingMemory?.forget(sessionId);
  }

  /** The tools a turn's calls invoked: its stored TOOL_CALL_FINISHED events' and this attempt's, each once, sorted. */
  #invoked(log: PipelineTurnLog, sessionId: string, turnId: number): string[] {
    const tools = new Set(this.#turns.get(`${turnKey(sessionId, turnId)}`)?.invoked);
    for (const event of log.stored(sessionId, turnId))
      if (event.kind === "TOOL_CALL_FINISHED") tools.add(event.payload.tool);
    return [...tools].sort();
  }

  /** The turn's tools, opened on the gate by its first agent call that has any. */
  #open(services: TurnServices, log: PipelineTurnLog, request: AgentRequest): OpenPipelineTurn {
    const key = `${turnKey(request.session_id, request.turn_id)}`;
    const open = this.#turns.get(key);
    if (open) return open;
    const ref = { session_id: request.session_id, turn_id: request.turn_id };
    const steps = recordedToolSteps(log.stored(ref.session_id, ref.turn_id));
    const answer = this.#answers.get(key);
    const answered = answer ? approvalOf(answer) : null;
    if (answered) steps.approvals[answered.callId] = answered.answer;
    const abort = new AbortController();
    const remoteRefs: Record<string, RemoteAgentRef> = {};
    const turn: OpenPipelineTurn = {
      allowed: new Set(),
      delegates: new Set(),
      remote: remoteAgents(remoteRefs),
      remoteRefs,
      listeners: new Map(),
      failures: [],
      invoked: new Set(),
      context: null,
      timeoutMs: request.timeout_ms,
      abort,
      close: () => {},
    };
    const record = (body: TurnRecord) => {
      if (body.kind === "TOOL_CALL_FINISHED") turn.invoked.add(body.payload.tool);
      if (body.kind === "TOOL_CALL_DENIED" || (body.kind === "TOOL_CALL_FINISHED" && !body.payload.ok)) {
        const message = body.kind === "TOOL_CALL_DENIED" ? body.payload.message : body.payload.error?.message;
        turn.failures.push(`${body.payload.tool}: ${message ?? "failed"}`.slice(0, 2_000));
      }
      log.record(ref, body);
    };
    const tools: TurnTools = {
      policies: [this.deps.policy],
      allowed: turn.allowed,
      delegates: turn.delegates,
      record,
      screenArgs: async (args) => (await screenInputs(services, ref, { args: args as JsonObject })).inputs.args,
      finished: steps.finished,
      modelSteps: steps.modelSteps,
      delegated: steps.delegations,
      approvals: steps.approvals,
      flushed: () => log.flushed(ref),
      delegateTo: ({ to, message, depth, callKey }) =>
        this.#delegate(services, turn, ref, { to, message, depth, callKey }),
      askApproval: (callKey, asked) => {
        const listener = turn.listeners.get(callKey);
        listener?.(asked);
        return listener !== undefined;
      },
      signal: abort.signal,
      compactionGate: () => this.#pressure.get(key) ?? null,
      ...(this.deps.workingMemory ? { ownTools: this.#ownTools(this.deps.workingMemory, log, ref, record) } : {}),
      ...(this.deps.timeoutMs !== undefined ? { timeoutMs: this.deps.timeoutMs } : {}),
    };
    turn.close = this.deps.gate.openTurn(ref.session_id, ref.turn_id, tools);
    this.#turns.set(key, turn);
    return turn;
  }

  /** The tools the runner answers itself in this turn: the working memory's update. */
  #ownTools(
    memory: WorkingMemory,
    log: PipelineTurnLog,
    ref: { session_id: string; turn_id: number },
    record: (body: TurnRecord) => void,
  ): NonNullable<TurnTools["ownTools"]> {
    return {
      [WORKING_MEMORY_TOOL]: (request, callId) =>
        memory.update(ref, request, callId, {
          record,
          flushed: () => log.flushed(ref),
          stored: () => log.stored(ref.session_id, ref.turn_id),
        }),
    };
  }

  /** A delegated call: the agent asked answers the delegating agent's message, with the turn's memory, one level deeper. */
  #delegate(
    services: TurnServices,
    turn: OpenPipelineTurn,
    ref: { session_id: string; turn_id: number },
    asked: { to: string; message: string; depth: number; callKey: string },
  ): Promise<AgentReply> {
    // A remote A2A agent is asked over A2A, under the same depth guard (the gate checked it).
    if (turn.remote.has(asked.to)) return turn.remote.reply(asked.to, asked.message, turn.abort.signal);
    const base = delegatedRequest(ref, asked.to, asked.message, turn.timeoutMs);
    const given = turn.context;
    const request: AgentRequest = {
      ...base,
      // The turn's memory and workspace, as the delegating agent saw them; the message is the delegating agent's.
      ...(given ? { context: { ...given, user_message: asked.message, claims: [], tool_failures: undefined } } : {}),
      tool_subject: this.deps.gate.subject,
      call_key: asked.callKey,
      delegation_depth: asked.depth,
      delegates: [...turn.delegates],
      ...(turn.activeSkills ? { active_skills: turn.activeSkills } : {}),
    };
    return services.callAgent(request, turn.abort.signal);
  }
}
