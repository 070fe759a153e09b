import { fromCallback } from "xstate";
import type { AskGate } from "../../agents/agentTools.ts";
import type { AgentDefinition } from "../../agents/defineAgent.ts";
import { runAgent } from "../../agents/runAgent.ts";
import type { ChatModel } from "../../contracts/model.ts";
import type { RecipeAgentCall, RecipeAgentEvent } from "../../contracts/recipeProtocol.ts";
import { withDeadline } from "../../deadline.ts";
import { ConclaveError } from "../../errors.ts";
import type { Recipe } from "../../recipes/recipe.ts";
import { agentCallKey, agentRequest, nodeAnswered, nodeFailed, nodeStreamEvent } from "../recipeHost/recipeActors.ts";
import type { TurnServices } from "../turnServices/turnServices.ts";
import { IN_PROCESS_WORKER, type InProcessTools } from "./inProcessTools.ts";

/**
 * Agents asked in this process, as a worker would answer them: the agent
 * named by the request (`unknown_agent` when none of `agents` has that id)
 * runs through `runAgent` with the model, within the request's budget
 * (`timeout`). A request offering tools or delegates gets `askGate`: its
 * tool calls, delegations and model steps go to the run's TurnToolCalls.
 */
export function inProcessCallAgent(
  agents: readonly AgentDefinition[],
  options: { model?: ChatModel | undefined; askGate?: AskGate | undefined },
): TurnServices["callAgent"] {
  const byId = new Map(agents.map((agent) => [agent.manifest.id, agent]));
  return async (request, signal, { onStream } = {}) => {
    const agent = byId.get(request.agent_id);
    if (!agent)
      throw new ConclaveError(
        "unknown_agent",
        `no agent '${request.agent_id}' runs in this process (given: ${[...byId.keys()].join(", ") || "none"})`,
      );
    const started = performance.now();
    // Bounded as a NATS request is: `timeout` past its budget, `cancelled` when the run ends first.
    const answer = await withDeadline(
      request.timeout_ms,
      (bounded) =>
        runAgent(agent, request, {
          model: options.model,
          signal: bounded,
          ...(onStream ? { onStream } : {}),
          ...(options.askGate && ((request.tools?.length ?? 0) > 0 || (request.delegates?.length ?? 0) > 0)
            ? { askGate: options.askGate }
            : {}),
        }),
      () => new ConclaveError("timeout", `agent ${request.agent_id} did not answer within ${request.timeout_ms} ms`),
      {
        signal,
        onAbort: () => new ConclaveError("cancelled", `the run ended before agent ${request.agent_id} answered`),
      },
    );
    return {
      agent_id: request.agent_id,
      ...answer,
      elapsed_ms: performance.now() - started,
      worker: IN_PROCESS_WORKER,
    };
  };
}

/**
 * The recipe machine's `callAgent` in this process: the node's agent request
 * (as a runner builds it) with the tools its node lists, asked through
 * `services` (the interceptors' screening of its streams included). Sends
 * back the agent's stream parts, then `node.answered` or `node.failed`. An
 * agent call with tools or delegates has a `call_key`
 * (`<node>.<step>.<attempt>`), which names its tool calls, delegations and
 * model steps on the log.
 */
export function inProcessAgentActor(
  recipe: Recipe,
  run: {
    services: Pick<TurnServices, "callAgent">;
    tools: InProcessTools | null;
    nodeTimeoutMs: number;
    /** Fires when the run ends: every agent call stops. */
    signal: AbortSignal;
  },
) {
  return fromCallback<{ type: "noop" }, RecipeAgentCall, RecipeAgentEvent>(({ input, sendBack }) => {
    const abort = new AbortController();
    const signal = AbortSignal.any([abort.signal, run.signal]);
    const send = (event: RecipeAgentEvent) => {
      if (!signal.aborted) sendBack(event);
    };
    const node = input.node;
    const tools = run.tools?.offered(node) ?? [];
    const delegates = run.tools?.delegatesOf(node) ?? [];
    const request = {
      ...agentRequest(recipe, input, run.nodeTimeoutMs),
      ...(tools.length > 0 || delegates.length > 0 ? { tools, call_key: agentCallKey(input) } : {}),
      ...(delegates.length > 0 ? { delegates } : {}),
    };
    run.services.callAgent(request, signal, { onStream: (part) => send(nodeStreamEvent(node, part)) }).then(
      (reply) => send(nodeAnswered(node, reply)),
      (error: unknown) => send(nodeFailed(node, error)),
    );
    return () => abort.abort();
  });
}
