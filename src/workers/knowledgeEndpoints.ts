import type { z } from "zod";
import { type ServeOptions, serveFunction } from "../bus/serveActor.ts";
import type { ServiceGroup } from "../bus/service.ts";
import { type KnowledgeVerb, subjects } from "../bus/subjects.ts";
import {
  KnowledgeAddRequest,
  KnowledgeListRequest,
  KnowledgeRemoveRequest,
  KnowledgeSearchRequest,
  knowledgeQuery,
} from "../contracts/knowledge.ts";
import type { KnowledgeService } from "../knowledge/service.ts";

/** How long one `add` request (a batch of chunks to embed and store) may take. */
const ADD_TIMEOUT_MS = 120_000;

/**
 * The knowledge service's endpoints, `conclave.knowledge.query.<verb>`, in the services' queue
 * group: each request (relayed by a runner, with the tenant who asked) goes to one knowledge
 * worker, so retrieval scales with them.
 */
export function serveKnowledge(group: ServiceGroup, knowledge: KnowledgeService, options: ServeOptions = {}): void {
  const serve = <S extends z.ZodType, R>(
    verb: KnowledgeVerb,
    request: S,
    handle: (tenant: string | null, request: z.infer<S>, signal: AbortSignal) => Promise<R>,
    timeoutMs?: number,
  ) =>
    serveFunction(
      group,
      {
        name: verb,
        subject: subjects.knowledgeQuery(verb),
        request: knowledgeQuery(request),
        ...(timeoutMs ? { timeoutMs: () => timeoutMs } : {}),
        handle: (query, signal) => {
          const { tenant, request: asked } = query as { tenant: string | null; request: z.infer<S> };
          return handle(tenant, asked, signal);
        },
      },
      options,
    );
  serve(
    "add",
    KnowledgeAddRequest,
    (tenant, request, signal) => knowledge.add(tenant, request, signal),
    ADD_TIMEOUT_MS,
  );
  serve("list", KnowledgeListRequest, async (tenant, request) => ({
    documents: await knowledge.list(tenant, request),
  }));
  serve("search", KnowledgeSearchRequest, async (tenant, request, signal) => ({
    hits: await knowledge.search(tenant, request, signal),
  }));
  serve("remove", KnowledgeRemoveRequest, (tenant, request) => knowledge.remove(tenant, request));
}
