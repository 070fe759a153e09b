/**
 * A client span around one NATS request (src/bus/request.ts): named for what
 * it asks (`invoke_agent <agent>`, `execute_tool <tool>`, or the endpoint's
 * subject), its context sent in the request's headers so the worker's span
 * is its child.
 */

import { headers, type MsgHdrs } from "@nats-io/nats-core";
import { type Attributes, SpanKind } from "@opentelemetry/api";
import { CONCLAVE, GEN_AI, turnAttributes } from "../telemetry/attributes.ts";
import { traceHeaders } from "../telemetry/natsHeaders.ts";
import { inSpan } from "../telemetry/tracer.ts";
import { SUBJECT_ROOT, subjects } from "./subjects.ts";

const AGENT_PREFIX = subjects.agent("");
const TOOL_PREFIX = subjects.tool("");
const CRITIC_PREFIX = subjects.critic("");
/** Subjects without an id in them: the span is named after the subject itself. */
const FIXED_SUBJECTS = new Set<string>([
  subjects.schedulerPlan,
  subjects.councilDecide,
  subjects.councilSafety,
  subjects.voiceRender,
  subjects.memoryRetrieve,
  subjects.memoryCommit,
  subjects.memoryQuery,
  subjects.agentsRoster,
]);

/** A span's name and attributes for a request on `subject` carrying `payload`. */
export function requestSpanOf(subject: string, payload: unknown): { name: string; attributes: Attributes } {
  const attributes: Attributes = {
    "messaging.system": "nats",
    "messaging.destination.name": subject,
    ...turnAttributes(payload),
  };
  if (subject.startsWith(AGENT_PREFIX)) {
    const agent = subject.slice(AGENT_PREFIX.length);
    attributes[GEN_AI.operationName] = "invoke_agent";
    attributes[GEN_AI.agentName] = agent;
    attributes[GEN_AI.agentId] = agent;
    return { name: `invoke_agent ${agent}`, attributes };
  }
  if (subject.startsWith(TOOL_PREFIX)) {
    const tool = subject.slice(TOOL_PREFIX.length);
    attributes[GEN_AI.operationName] = "execute_tool";
    attributes[GEN_AI.toolName] = tool;
    return { name: `execute_tool ${tool}`, attributes };
  }
  // Critic names and the fixed subjects are few; any other subject ends with an id (a session, a runner's token).
  const endpoint =
    FIXED_SUBJECTS.has(subject) || subject.startsWith(CRITIC_PREFIX) || !subject.startsWith(`${SUBJECT_ROOT}.`)
      ? subject
      : subject.slice(0, subject.lastIndexOf("."));
  attributes[CONCLAVE.endpoint] = endpoint;
  return { name: endpoint, attributes };
}

/**
 * Sends a request (`send`, given the headers to send) inside a client span:
 * the span's context goes in the headers (never undefined). Call it only when
 * `tracingActive()`: untraced requests skip it, and allocate nothing for it.
 */
export function tracedRequest<T>(
  subject: string,
  payload: unknown,
  send: (headers: MsgHdrs) => Promise<T>,
): Promise<T> {
  const { name, attributes } = requestSpanOf(subject, payload);
  // Always headers, empty when no propagator is registered: the caller tells a traced send by them.
  return inSpan(name, { kind: SpanKind.CLIENT, attributes }, () => send(traceHeaders() ?? headers()));
}
