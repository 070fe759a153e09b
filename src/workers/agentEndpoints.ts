import type { ServiceGroup } from "@nats-io/services";
import { fromPromise } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import { HandlerError } from "../bus/errors.ts";
import { type ServeOptions, serveActor } from "../bus/serveActor.ts";
import { subjects } from "../bus/subjects.ts";
import type { AgentDefinition } from "../cognition/agentDefinition.ts";
import { AgentOutput, type AgentReply, AgentRequest } from "../contracts/agent.ts";

/** Identifies this process in replies, for provenance. */
export const workerIdentity = (): string => `${process.env.HOSTNAME ?? "local"}:${process.pid}`;

/**
 * Serves one agent on `conclave.agent.<id>`: each request runs the agent
 * machine with the agent's offline rule path as its `think` actor.
 */
export function serveAgent(group: ServiceGroup, agent: AgentDefinition, options: ServeOptions = {}): void {
  const logic = agentMachine.provide({
    actors: {
      think: fromPromise(async ({ input }) => AgentOutput.parse(agent.rules(input.context))),
    },
  });
  const worker = workerIdentity();
  serveActor(
    group,
    {
      name: agent.manifest.id.replace(".", "_"),
      subject: subjects.agent(agent.manifest.id),
      request: AgentRequest,
      logic,
      begin: { type: "start" },
      metadata: { agent: agent.manifest.id, agency: agent.manifest.agency, priority: agent.manifest.priority },
      // The machine enforces the request's budget itself; this is only a backstop.
      timeoutMs: (request) => request.timeout_ms + 1_000,
      reply: (output, request, { elapsedMs }): AgentReply => {
        if (request.agent_id !== agent.manifest.id) {
          throw new HandlerError(
            "invalid_request",
            `this endpoint serves ${agent.manifest.id}, not ${request.agent_id}`,
          );
        }
        if (output.status === "failed" || !output.output) {
          throw new HandlerError(output.error?.code ?? "agent_failed", output.error?.message ?? "agent failed");
        }
        return { agent_id: output.agent_id, output: output.output, elapsed_ms: elapsedMs, worker };
      },
    },
    options,
  );
}
