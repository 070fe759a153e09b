import type { NatsConnection } from "@nats-io/nats-core";
import { fromPromise } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import type { AgentDefinition } from "../agents/defineAgent.ts";
import type { IdentityFiles } from "../agents/identityFile.ts";
import { runAgent } from "../agents/runAgent.ts";
import { HandlerError } from "../bus/errors.ts";
import { requestJson } from "../bus/request.ts";
import { type ServeOptions, serveActor } from "../bus/serveActor.ts";
import type { ServiceGroup } from "../bus/service.ts";
import { subjects } from "../bus/subjects.ts";
import { publishJson } from "../bus/wire.ts";
import { type AgentReply, AgentRequest } from "../contracts/agent.ts";
import type { ChatModel } from "../contracts/model.ts";
import { type GateRequest, ToolGateReply } from "../contracts/tool.ts";
import type { Usage } from "../contracts/usage.ts";
import { agentLedgerClients, sessionLedgers } from "../ledgers/clients.ts";
import type { WorkerSkills } from "../skills/agentSkills.ts";

/** Deadline of one ledger request an agent makes (a runner answers it). */
const LEDGER_TIMEOUT_MS = 5_000;

/** Identifies this process in replies, for provenance. */
export const workerIdentity = (): string => `${process.env.HOSTNAME ?? "local"}:${process.pid}`;

/** What an agent endpoint needs from its worker. */
export interface AgentHost {
  /** Publishes the agent's stream parts to the request's `stream_subject`. */
  nc: NatsConnection;
  /** The configured model; absent in the offline mode. */
  model?: ChatModel | undefined;
  /** The model's name, or "offline", for the endpoint's metadata. */
  modelName: string;
  /** The worker's skills (`--skills DIR`): each request's user message picks the agent's `ctx.skills`. */
  skills?: WorkerSkills | undefined;
  /** The agents' identity files (`CONCLAVE_IDENTITY_DIR`): each call reads its agent's, if it changed. */
  identities?: IdentityFiles | undefined;
}

/**
 * Serves one agent on `conclave.agent.<id>`: each request runs the agent
 * machine, whose `think` runs the agent (src/agents/runAgent.ts) and checks
 * its answer against the agent's own schema before it is sent.
 */
export function serveAgent(
  group: ServiceGroup,
  agent: AgentDefinition,
  host: AgentHost,
  options: ServeOptions = {},
): void {
  const logic = agentMachine.provide({
    actors: {
      think: fromPromise(({ input, signal }) =>
        runAgent(agent, input, {
          model: host.model,
          signal,
          ...(host.identities ? { identity: (agentId: string) => host.identities!.read(agentId) } : {}),
          ...(host.skills
            ? {
                skills: (message: string, onUsage?: (usage: Usage) => void, active?: readonly string[]) =>
                  host.skills!.forMessage(message, onUsage, active),
                skillCatalog: host.skills,
              }
            : {}),
          // On the worker role's own subject: the runner records the changes as this agent's.
          ledgers: () =>
            sessionLedgers(agentLedgerClients(host.nc, LEDGER_TIMEOUT_MS, agent.manifest.id), input.session_id),
          ...(input.stream_subject
            ? {
                onStream: (part) => {
                  if (!host.nc.isClosed()) publishJson(host.nc, input.stream_subject!, part);
                },
              }
            : {}),
          ...(input.tool_subject
            ? {
                askGate: (ask: GateRequest) =>
                  requestJson(host.nc, input.tool_subject!, ask, ToolGateReply, {
                    // A call may wait for a parallel slot, and the tool has its own deadline: the agent's budget bounds it.
                    timeoutMs: Math.max(1, input.timeout_ms),
                    signal,
                  }),
              }
            : {}),
        }),
      ),
    },
  });
  const worker = workerIdentity();
  serveActor(
    group,
    {
      name: agent.manifest.id.replaceAll(".", "_"),
      subject: subjects.agent(agent.manifest.id),
      request: AgentRequest,
      // A pipeline step: one answer per agent, wave and round of a turn, keyed session first (an erase finds it).
      // Not a recipe node's call (its own durable steps cover it) nor one that calls tools through its runner's
      // gate (a new runner must serve them).
      stepKey: (request) =>
        request.recipe || request.tool_subject
          ? undefined
          : `${request.session_id}.agent.${request.agent_id}.${request.turn_id}.${request.wave}.${request.mode}.${request.round}`,
      logic,
      begin: { type: "start" },
      metadata: {
        agent: agent.manifest.id,
        agency: agent.manifest.agency,
        priority: agent.manifest.priority,
        model: host.modelName,
      },
      // The machine enforces the request's budget itself; this is only a backstop.
      timeoutMs: (request) => request.timeout_ms + 1_000,
      reply: (output, request, { elapsedMs }): AgentReply => {
        if (request.agent_id !== agent.manifest.id) {
          throw new HandlerError(
            "invalid_request",
            `this endpoint serves ${agent.manifest.id}, not ${request.agent_id}`,
          );
        }
        if (output.status === "failed" || !output.answer) {
          throw new HandlerError(output.error?.code ?? "agent_failed", output.error?.message ?? "agent failed");
        }
        const { answer } = output;
        return {
          agent_id: output.agent_id,
          ...("output" in answer ? { output: answer.output } : {}),
          contribution: answer.contribution,
          elapsed_ms: elapsedMs,
          worker,
          ...(answer.usage ? { usage: answer.usage } : {}),
          ...(answer.skills ? { skills: answer.skills } : {}),
          ...(answer.routing_usage ? { routing_usage: answer.routing_usage } : {}),
          ...(answer.skills_activated ? { skills_activated: answer.skills_activated } : {}),
          ...(answer.skills_completed ? { skills_completed: answer.skills_completed } : {}),
          ...(answer.identity ? { identity: answer.identity } : {}),
        };
      },
    },
    options,
  );
}
