import type { ServiceGroup } from "@nats-io/services";
import { fromPromise } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import { HandlerError } from "../bus/errors.ts";
import { type ServeOptions, serveActor } from "../bus/serveActor.ts";
import { subjects } from "../bus/subjects.ts";
import type { AgentDefinition } from "../cognition/agentDefinition.ts";
import type { CognitionBackend } from "../cognition/backend.ts";
import { type AgentReply, AgentRequest } from "../contracts/agent.ts";
import type { Usage } from "../contracts/usage.ts";

/** Identifies this process in replies, for provenance. */
export const workerIdentity = (): string => `${process.env.HOSTNAME ?? "local"}:${process.pid}`;

/**
 * Serves one agent on `conclave.agent.<id>`: each request runs the agent
 * machine, whose `think` is the backend (offline rules or the model).
 */
export function serveAgent(
  group: ServiceGroup,
  agent: AgentDefinition,
  backend: CognitionBackend,
  options: ServeOptions = {},
): void {
  // Usage of the call that produced the output, keyed by the request object (one per actor).
  const usageOf = new WeakMap<AgentRequest, Usage>();
  const logic = agentMachine.provide({
    actors: {
      think: fromPromise(async ({ input, signal }) => {
        const { output, usage } = await backend.think(agent, input, signal);
        if (usage) usageOf.set(input, usage);
        return output;
      }),
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
      metadata: {
        agent: agent.manifest.id,
        agency: agent.manifest.agency,
        priority: agent.manifest.priority,
        model: backend.name,
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
        if (output.status === "failed" || !output.output) {
          throw new HandlerError(output.error?.code ?? "agent_failed", output.error?.message ?? "agent failed");
        }
        const usage = usageOf.get(request);
        return {
          agent_id: output.agent_id,
          output: output.output,
          elapsed_ms: elapsedMs,
          worker,
          ...(usage ? { usage } : {}),
        };
      },
    },
    options,
  );
}
