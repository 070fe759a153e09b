/**
 * Knowledge on the turn's path (docs/knowledge.md): an agent call whose agent (in the pipeline) or
 * recipe node names knowledge collections gets the chunks of them that pass the `rag_external`
 * gating (src/context/ragExternal.ts) in its context, each with its citation. The runner searches
 * through the knowledge workers' queue group with the turn's tenant, so a tenant's turn never reads
 * another's collections. A call that names none goes straight on: no request, no wait.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { AgentDirectory } from "../../agents/directory.ts";
import { requestJson } from "../../bus/request.ts";
import { subjects } from "../../bus/subjects.ts";
import { gatePassages, PASSAGES_ASKED, ragExternalPermitted } from "../../context/ragExternal.ts";
import type { AgentRequest } from "../../contracts/agent.ts";
import type { ArenaPolicy } from "../../contracts/context.ts";
import { type KnowledgeHit, KnowledgeSearchReply, type KnowledgeSearchRequest } from "../../contracts/knowledge.ts";
import { turnKey, turnLabel } from "../../contracts/turnKey.ts";
import { messageOf, singleLine } from "../../errors.ts";
import type { Logger } from "../../telemetry/log.ts";
import type { TurnInterceptor } from "./turnInterceptor.ts";

/** How long an agent call waits for its knowledge search before it goes on without it. */
export const KNOWLEDGE_SEARCH_TIMEOUT_MS = 3_000;

/** The longest query sent: the start of the message (a recipe node's inputs as text may be long). */
const MAX_QUERY_CHARS = 2_000;

/**
 * The tenant of each turn this runner runs (null: the runtime's own account), from its WAL entry:
 * the owner of the collections its agents may read. A turn not known here reads none.
 */
export class TurnTenants {
  readonly #tenants = new Map<string, string | null>();

  /** The turn is handed to its session: whose it is. */
  set(sessionId: string, turnId: number, tenant: string | undefined): void {
    this.#tenants.set(`${turnKey(sessionId, turnId)}`, tenant ?? null);
  }

  /** Its tenant; undefined when this runner was not given the turn. */
  of(sessionId: string, turnId: number): string | null | undefined {
    return this.#tenants.get(`${turnKey(sessionId, turnId)}`);
  }

  /** The turn ended (or left this runner): forgotten. */
  ended(sessionId: string, turnId: number): void {
    this.#tenants.delete(`${turnKey(sessionId, turnId)}`);
  }
}

/** Searches the knowledge workers for `tenant` (null: the runtime's own account). */
export type KnowledgeSearch = (
  tenant: string | null,
  request: KnowledgeSearchRequest,
  signal: AbortSignal,
) => Promise<KnowledgeHit[]>;

/** A search through the knowledge workers' queue group (`conclave.knowledge.query.search`), which only runners may ask. */
export function workersSearch(nc: NatsConnection): KnowledgeSearch {
  return async (tenant, request, signal) =>
    (
      await requestJson(nc, subjects.knowledgeQuery("search"), { tenant, request }, KnowledgeSearchReply, {
        timeoutMs: KNOWLEDGE_SEARCH_TIMEOUT_MS,
        signal,
      })
    ).hits;
}

/** What the interceptor needs. */
export interface KnowledgeRetrievalDeps {
  search: KnowledgeSearch;
  /** Where a pipeline agent's `knowledge` is read (its manifest). */
  directory: Promise<AgentDirectory>;
  tenants: TurnTenants;
  /** The context arena's budget, as the turn plans with it. */
  arena: ArenaPolicy;
  log: Logger;
}

/** The collections a call's context is searched in: its node's, or (in the pipeline) its agent's. */
async function collectionsOf(request: AgentRequest, directory: () => Promise<AgentDirectory>) {
  if (request.mode !== "respond") return undefined;
  if (request.recipe) return request.knowledge;
  return request.knowledge ?? (await directory()).manifest(request.agent_id)?.knowledge;
}

/** The interceptor (see the file). */
export function knowledgeRetrievalInterceptor(deps: KnowledgeRetrievalDeps): TurnInterceptor {
  let directory: AgentDirectory | null = null;
  void deps.directory.then(
    (opened) => {
      directory = opened;
    },
    () => {},
  );
  const directoryNow = async () => directory ?? (await deps.directory);
  return {
    callAgent: async (input, next) => {
      const { request, signal } = input;
      const collections = await collectionsOf(request, directoryNow);
      if (!collections?.length) return next(input);
      const label = `${turnLabel(request.session_id, request.turn_id)} ${request.agent_id}`;
      const tenant = deps.tenants.of(request.session_id, request.turn_id);
      if (tenant === undefined) {
        deps.log.warn(`${label}: knowledge left out: the turn's tenant is not known here`);
        return next(input);
      }
      if (!ragExternalPermitted(request.context, deps.arena)) {
        deps.log.debug(`${label}: knowledge left out: the context is at critical pressure`);
        return next(input);
      }
      let hits: KnowledgeHit[];
      try {
        hits = await deps.search(
          tenant,
          {
            collections,
            query: request.context.user_message.slice(0, MAX_QUERY_CHARS),
            limit: PASSAGES_ASKED,
          },
          signal,
        );
      } catch (error) {
        signal.throwIfAborted();
        deps.log.warn(`${label}: knowledge left out: ${singleLine(messageOf(error))}`);
        return next(input);
      }
      const gated = gatePassages(request.context, hits, deps.arena);
      deps.log.debug(
        `${label}: ${gated.passages.length} knowledge passage(s) of ${hits.length} found (${gated.irrelevant} not relevant, ${gated.overBudget} past the budget)`,
      );
      if (gated.passages.length === 0) return next(input);
      return next({ ...input, request: { ...request, context: { ...request.context, knowledge: gated.passages } } });
    },
  };
}
