import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { asRelayedError, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import { requestJson } from "../../bus/request.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { type KnowledgeVerb, SUBJECT_ROOT, subjects } from "../../bus/subjects.ts";
import { TenantName } from "../../bus/tenancy.ts";
import { decodeMessage, respondJson } from "../../bus/wire.ts";
import { KNOWLEDGE_VERBS } from "../../contracts/knowledge.ts";
import { singleLine } from "../../errors.ts";
import type { Logger } from "../../telemetry/log.ts";

/** How long an `add` (a batch of chunks to embed and store) may take on its worker; other requests get 10 s. */
export const KNOWLEDGE_ADD_TIMEOUT_MS = 130_000;

/** The tenant of `conclave.tenant.<tenant>.knowledge.<verb>`, null for `conclave.knowledge.<verb>`. */
function tenantOf(subject: string): string | null {
  const tokens = subject.split(".");
  if (tokens[0] !== SUBJECT_ROOT || tokens[1] !== "tenant") return null;
  const tenant = TenantName.safeParse(tokens[2]);
  if (!tenant.success) throw new HandlerError("invalid_request", `bad tenant in subject ${subject}`);
  return tenant.data;
}

/**
 * A client's knowledge request (`conclave.knowledge.<verb>`, or a tenant's
 * `conclave.tenant.<tenant>.knowledge.<verb>`): the runner relays it, with the tenant it came from,
 * to the knowledge workers (`conclave.knowledge.query.<verb>`, which only runners may ask), and
 * answers with their reply. The workers check the request itself.
 */
export async function relayKnowledge(deps: { nc: NatsConnection; log: Logger }, msg: ServiceMsg): Promise<void> {
  try {
    const verb = msg.subject.split(".").at(-1) as KnowledgeVerb;
    if (!(KNOWLEDGE_VERBS as readonly string[]).includes(verb))
      throw new HandlerError(
        "invalid_request",
        `no knowledge request ${singleLine(msg.subject, 100)}: add, list, search or remove`,
      );
    const tenant = tenantOf(msg.subject);
    const request = decodeMessage(msg, z.unknown(), `knowledge ${verb} request`, 1_048_576);
    const reply = await requestJson(deps.nc, subjects.knowledgeQuery(verb), { tenant, request }, z.unknown(), {
      timeoutMs: verb === "add" ? KNOWLEDGE_ADD_TIMEOUT_MS : 10_000,
    });
    if (isInboxReply(msg.reply, "runner")) respondJson(msg, reply);
  } catch (error) {
    // The worker's answer (a bad request, no knowledge worker) is passed on with its code.
    const failure = asRelayedError(error);
    deps.log.warn(`knowledge request on ${msg.subject}: ${singleLine(failure.message)}`);
    if (isInboxReply(msg.reply, "runner")) respondWithError(msg, failure);
  }
}
