import { fromCallback, fromPromise } from "xstate";
import { zeroSensors } from "../../../machines/turn/index.ts";
import { type RemoteAgents, remoteAgents } from "../../a2a/remoteAgents.ts";
import type { AgentDirectory } from "../../agents/directory.ts";
import type { BlackboardStores } from "../../blackboard/open.ts";
import type { AgentContext, AgentReply, AgentRequest, AgentStreamEvent } from "../../contracts/agent.ts";
import { describeIssues } from "../../contracts/issues.ts";
import type { MemoryRetrieveReply } from "../../contracts/memory.ts";
import type {
  RecipeAgentCall,
  RecipeAgentEvent,
  RecipeCouncilCall,
  RecipeCouncilResult,
  RecipeLogicCall,
  RecipePersistCall,
} from "../../contracts/recipeProtocol.ts";
import type { JsonObject, ToolApproval } from "../../contracts/recipeRun.ts";
import type { ToolManifest } from "../../contracts/tool.ts";
import { neutralModulators, neutralStance } from "../../contracts/workspace.ts";
import { ConclaveError, codeOf, messageOf } from "../../errors.ts";
import { fromRecipeJsonSchema } from "../../recipes/jsonSchema.ts";
import type { Recipe } from "../../recipes/recipe.ts";
import type { ToolPolicy } from "../../tools/policy.ts";
import { stricterRisk } from "../../tools/risk.ts";
import type { ToolGate } from "../toolCalls/toolGate.ts";
import type { TurnServices } from "../turnServices/turnServices.ts";
import { NO_RUN_MEMORY, type RunMemory, type RunMemoryServices } from "./runMemory.ts";

/** What an operator's handler for a workflow `logic` step is given. */
export interface LogicContext {
  sessionId: string;
  turnId: number;
  /** The step's id (also the handler's name). */
  node: string;
  /** The blackboard as it stands (a copy: the handler's result is what is written back). */
  blackboard: JsonObject;
  signal: AbortSignal;
}

/**
 * Code the operator registers to run a workflow `logic` step (the document's
 * own `code` never runs). Its result is written to the blackboard under the
 * step's id; throwing fails the step (retried by policy.max_retries).
 */
export type LogicHandler = (context: LogicContext) => unknown;

/** What the runner gives the recipe machines it hosts. */
export interface RecipeMachineDeps {
  /**
   * How agents are asked, and inputs screened (the same calls, interceptors and streams as the
   * pipeline's), and the session's memory retrieved and committed (absent: runs have no memory).
   */
  services: Pick<TurnServices, "callAgent" | "screen" | "senseFast"> & RunMemoryServices;
  stores: Pick<BlackboardStores, "get">;
  logicHandlers: Readonly<Record<string, LogicHandler>>;
  /** Budget of one agent call of a node (capped by the run's deadline). */
  nodeTimeoutMs: number;
  /** Agents' tool calls: the runner's gate, the live tools, and the runner's policy. Absent: no tools are offered. */
  tools?: RecipeTools;
}

/** How a runner lets recipe agents call tools. */
export interface RecipeTools {
  gate: ToolGate;
  directory: Promise<AgentDirectory>;
  /** The runner's own policy (the recipe's `policy.tools` applies too; the stricter wins). */
  policy?: ToolPolicy;
  /** Budget of one tool call. Default 30 s. */
  timeoutMs?: number;
}

/** The tools a node's agent is offered: those its definition lists that a live worker hosts, at the stricter risk. */
async function offeredTools(recipe: Recipe, call: RecipeAgentCall, tools: RecipeTools): Promise<ToolManifest[]> {
  const node = recipe.nodes.find((candidate) => candidate.id === call.node);
  const names = node?.kind === "agent" ? (node.tools ?? []) : [];
  if (names.length === 0) return [];
  const directory = await tools.directory;
  return names.flatMap((name) => {
    const manifest = directory.tool(name);
    return manifest ? [{ ...manifest, risk: stricterRisk(manifest.risk, recipe.tool_risks?.[name]) }] : [];
  });
}

/**
 * What an agent's context holds of the session's memory, as a pipeline turn's agents get it:
 * its episodes always, the rest when there is any.
 */
export function memoryContext(
  memory: MemoryRetrieveReply | undefined,
): Pick<AgentContext, "episodes" | "user_facts" | "open_threads" | "procedures" | "ledgers"> {
  if (!memory) return { episodes: [] };
  return {
    episodes: memory.episodes,
    ...(memory.user_facts.length > 0 ? { user_facts: memory.user_facts } : {}),
    ...(memory.open_threads.length > 0 ? { open_threads: memory.open_threads } : {}),
    ...(memory.procedures?.length ? { procedures: memory.procedures } : {}),
    ...(memory.ledgers ? { ledgers: memory.ledgers } : {}),
  };
}

/**
 * The skills an agent call of a run is given whatever its message routes to (AgentRequest
 * `active_skills`): those activated for the session (read with the run's memory, when it has
 * memory), the recipe's, and its node's own; absent when there are none.
 */
export function activeSkillsOf(
  memory: MemoryRetrieveReply | undefined,
  ...declared: (readonly string[] | undefined)[]
): { active_skills?: string[] } {
  const skills = [...new Set([...(memory?.active_skills ?? []), ...declared.flatMap((list) => list ?? [])])];
  return skills.length > 0 ? { active_skills: skills } : {};
}

/**
 * The agent request a recipe node sends: the recipe's inputs as the message, no workspace, the
 * session's memory the run retrieved (none: no memory), and the skills the session and the recipe give.
 */
export function agentRequest(
  recipe: Recipe,
  call: RecipeAgentCall,
  timeoutMs: number,
  memory?: MemoryRetrieveReply,
): AgentRequest {
  const node = recipe.nodes.find((candidate) => candidate.id === call.node);
  const knowledge = node?.kind === "agent" ? node.knowledge : undefined;
  const nodeSkills = node?.kind === "agent" ? node.skills : undefined;
  return {
    session_id: call.session_id,
    turn_id: call.turn_id,
    agent_id: call.agent,
    wave: 0,
    mode: "respond",
    round: 0,
    timeout_ms: timeoutMs,
    context: {
      user_message: call.prompt,
      sensors: zeroSensors(),
      modulators: neutralModulators(),
      stance: neutralStance(),
      claims: [],
      ...memoryContext(memory),
    },
    recipe: {
      recipe: recipe.name,
      node: call.node,
      inputs: call.inputs,
      ...(call.system_prompt ? { system_prompt: call.system_prompt } : {}),
      ...(call.feedback ? { feedback: call.feedback } : {}),
    },
    // The node's collections: the runner's knowledge layer searches them for the call's context.
    ...(knowledge?.length ? { knowledge } : {}),
    ...activeSkillsOf(memory, recipe.skills, nodeSkills),
  };
}

/**
 * The request of a delegated call (`ctx.delegate`): the delegating agent's message, no recipe inputs,
 * the session's memory the run retrieved (none: no memory), and the session's and the recipe's skills.
 */
export function delegatedRequest(
  turn: { session_id: string; turn_id: number },
  agentId: string,
  message: string,
  timeoutMs: number,
  memory?: MemoryRetrieveReply,
  skills?: readonly string[],
): AgentRequest {
  return {
    session_id: turn.session_id,
    turn_id: turn.turn_id,
    agent_id: agentId,
    wave: 0,
    mode: "respond",
    round: 0,
    timeout_ms: timeoutMs,
    context: {
      user_message: message,
      sensors: zeroSensors(),
      modulators: neutralModulators(),
      stance: neutralStance(),
      claims: [],
      ...memoryContext(memory),
    },
    ...activeSkillsOf(memory, skills),
  };
}

/** What a node keeps of an agent's answer: its own output, or (built-in agents) its contribution. */
export const answerOf = (reply: AgentReply): unknown => reply.output ?? reply.contribution;

/** A node's agent call's durable identity in the turn (`<node>.<step>.<attempt>`): its tool calls and model steps are keyed by it. */
export const agentCallKey = (call: RecipeAgentCall): string => `${call.node}.${call.step ?? 0}.${call.attempt}`;

/** What a node's `callAgent` sends back for a part of its agent's streams (stream ids `<node>:<name>`). */
export function nodeStreamEvent(node: string, part: AgentStreamEvent): RecipeAgentEvent {
  const stream_id = `${node}:${part.stream}`;
  if (part.type === "start")
    return { type: "node.stream.start", node, stream_id, content_type: part.content_type ?? "text/plain" };
  if (part.type === "chunk") return { type: "node.stream.chunk", node, stream_id, delta: part.delta ?? "" };
  if (part.type === "intercepted") {
    const { interceptor, action, reason } = part;
    return { type: "node.stream.intercepted", node, stream_id, interceptor, action, reason };
  }
  return { type: "node.stream.end", node, stream_id };
}

/** What a node's `callAgent` sends back when its agent answered. */
export const nodeAnswered = (node: string, reply: AgentReply): RecipeAgentEvent => ({
  type: "node.answered",
  node,
  output: answerOf(reply),
  agent: reply.agent_id,
  worker: reply.worker,
  elapsed_ms: reply.elapsed_ms,
  ...(reply.usage ? { usage: reply.usage } : {}),
  ...(reply.skills ? { skills: reply.skills } : {}),
});

/** What a node's `callAgent` sends back when its agent failed. */
export const nodeFailed = (node: string, error: unknown): RecipeAgentEvent => ({
  type: "node.failed",
  node,
  code: codeOf(error) ?? "agent_failed",
  message: messageOf(error),
});

/** A voter's vote: its answer's `vote`, `decision` or `answer` field, or the answer itself as text. */
export function voteOf(answer: unknown): string {
  if (typeof answer === "string") return answer.trim();
  if (typeof answer === "object" && answer !== null) {
    for (const key of ["vote", "decision", "answer", "verdict"]) {
      const value = (answer as Record<string, unknown>)[key];
      if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") return String(value);
    }
  }
  return JSON.stringify(answer);
}

/** Consensus: every voter answered alike. Majority: one vote has more than half of the voters. */
export function tally(
  votes: Record<string, string>,
  voters: number,
  strategy: "consensus" | "majority",
): string | null {
  const counts = new Map<string, number>();
  for (const vote of Object.values(votes)) counts.set(vote, (counts.get(vote) ?? 0) + 1);
  const [best, count] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0] ?? [null, 0];
  if (strategy === "consensus") return counts.size === 1 && count === voters ? best : null;
  return count * 2 > voters ? best : null;
}

/** Per agent call (`call_key`), who learns that one of its tool calls waits for approval. */
export type ApprovalListeners = Map<
  string,
  (request: { approval: ToolApproval; prompt: string; required_role: string }) => void
>;

/**
 * The recipe machine's actors, done by the runner: agents over NATS (given the run's memory), logic
 * handlers, the blackboard store (and, at the run's successful end, the commit of its episode).
 */
export function recipeImplementations(
  host: RecipeMachineDeps,
  recipe: Recipe,
  runSignal: AbortSignal,
  approvals: ApprovalListeners = new Map(),
  memory: RunMemory = NO_RUN_MEMORY,
  /** The run's remote A2A agents (a node whose agent is one asks it over A2A). */
  remote: RemoteAgents = remoteAgents(recipe.remote_agents ?? {}),
) {
  const outputs = recipe.outputs_schema ? fromRecipeJsonSchema(recipe.outputs_schema) : null;
  const store = () => host.stores.get(recipe.persistence);
  return {
    actors: {
      loadBlackboard: fromPromise<JsonObject | null, { session_id: string; turn_id: number }>(async ({ input }) =>
        (await store()).load(input.session_id),
      ),
      callAgent: fromCallback<{ type: "noop" }, RecipeAgentCall, RecipeAgentEvent>(({ input, sendBack }) => {
        const abort = new AbortController();
        const stop = () => abort.abort();
        if (runSignal.aborted) stop();
        else runSignal.addEventListener("abort", stop, { once: true });
        const send = (event: RecipeAgentEvent) => {
          if (!abort.signal.aborted) sendBack(event);
        };
        const node = input.node;
        let listening: string | null = null;
        const asked = async (): Promise<AgentRequest> => {
          const request = agentRequest(recipe, input, host.nodeTimeoutMs, await memory.context());
          const tools = host.tools ? await offeredTools(recipe, input, host.tools) : [];
          const agentNode = recipe.nodes.find((candidate) => candidate.id === node);
          const delegates = agentNode?.kind === "agent" ? (agentNode.delegates ?? []) : [];
          if ((tools.length === 0 && delegates.length === 0) || !host.tools) return request;
          // The node visit and attempt identify the call across a takeover: its finished tool calls are not made again.
          const callKey = agentCallKey(input);
          listening = callKey;
          approvals.set(callKey, ({ approval, prompt, required_role }) =>
            send({ type: "node.approval_required", node, approval, prompt, required_role }),
          );
          const replay = host.tools.gate.replayOf(input.session_id, input.turn_id, callKey);
          return {
            ...request,
            tools,
            tool_subject: host.tools.gate.subject,
            call_key: callKey,
            ...(delegates.length > 0 ? { delegates } : {}),
            ...(replay.length > 0 ? { replay: { model: replay } } : {}),
          };
        };
        const answered = remote.has(input.agent)
          ? remote.reply(input.agent, input.prompt, abort.signal)
          : asked().then((request) =>
              host.services.callAgent(request, abort.signal, {
                onStream: (part) => send(nodeStreamEvent(node, part)),
              }),
            );
        answered.then(
          (reply) => send(nodeAnswered(node, reply)),
          (error: unknown) => send(nodeFailed(node, error)),
        );
        return () => {
          runSignal.removeEventListener("abort", stop);
          abort.abort();
          if (listening) approvals.delete(listening);
        };
      }),
      runCouncil: fromPromise<RecipeCouncilResult, RecipeCouncilCall>(async ({ input, signal: own }) => {
        const signal = AbortSignal.any([own, runSignal]);
        const remembered = await memory.context();
        const settled = await Promise.allSettled(
          input.voters.map((voter) =>
            host.services.callAgent(
              agentRequest(
                recipe,
                { ...input, agent: voter, attempt: 1, inputs: input.inputs, prompt: input.prompt },
                host.nodeTimeoutMs,
                remembered,
              ),
              signal,
            ),
          ),
        );
        const votes: Record<string, string> = {};
        const failed: string[] = [];
        settled.forEach((result, index) => {
          const voter = input.voters[index]!;
          if (result.status === "fulfilled") votes[voter] = voteOf(answerOf(result.value));
          else failed.push(voter);
        });
        if (Object.keys(votes).length === 0)
          throw new ConclaveError("agent_failed", `every voter failed: ${input.voters.join(", ")}`);
        return { decision: tally(votes, input.voters.length, input.strategy), votes, failed };
      }),
      runLogic: fromPromise<unknown, RecipeLogicCall>(async ({ input, signal }) => {
        const handler = host.logicHandlers[input.handler];
        if (!handler)
          throw new ConclaveError("config", `no logic handler named '${input.handler}' is registered with this runner`);
        return handler({
          sessionId: input.session_id,
          turnId: input.turn_id,
          node: input.node,
          blackboard: structuredClone(input.blackboard),
          signal,
        });
      }),
      persist: fromPromise<void, RecipePersistCall>(async ({ input }) => {
        await (await store()).save(input.session_id, input.blackboard);
        if (!input.checkOutputs) return;
        const checked = outputs?.safeParse(input.blackboard);
        if (checked && !checked.success) {
          const issues = describeIssues(checked.error, { limit: 5, join: "; " });
          throw new ConclaveError("invalid_output", `the final blackboard does not match interface.outputs: ${issues}`);
        }
        // The run's successful end: what it learned goes to the session's memory before its TURN_COMPLETED.
        await memory.commit(input.blackboard);
      }),
    },
  };
}
