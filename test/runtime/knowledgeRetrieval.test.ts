/**
 * The runner's knowledge layer (src/runtime/turnServices/knowledgeRetrieval.ts): which calls it
 * searches for, as whom, and what reaches the agent. The search is given as a function here (the
 * e2e test test/e2e/knowledgeRetrieval.test.ts runs it against real knowledge workers).
 */
import { describe, expect, it } from "vitest";
import type { AgentDirectory } from "../../src/agents/directory.ts";
import { DEFAULT_ARENA_POLICY } from "../../src/context/arena.ts";
import type { AgentReply, AgentRequest } from "../../src/contracts/agent.ts";
import type { KnowledgeHit, KnowledgeSearchRequest } from "../../src/contracts/knowledge.ts";
import {
  type KnowledgeSearch,
  knowledgeRetrievalInterceptor,
  TurnTenants,
} from "../../src/runtime/turnServices/knowledgeRetrieval.ts";
import { silentLogger } from "../../src/telemetry/log.ts";
import { agentContext } from "../context/contexts.ts";

const hit: KnowledgeHit = {
  collection: "handbook",
  document: "ops.md",
  doc_id: "abc",
  chunk: 1,
  offset: 72,
  heading: "Ops > Backups",
  text: "The zebra snapshot runs at 02:17.",
  score: 0.7,
};

const manifests: Record<string, { knowledge?: string[] }> = {
  "acme.librarian": { knowledge: ["handbook"] },
  "acme.reader": {},
};
const directory = Promise.resolve({ manifest: (id: string) => manifests[id] } as unknown as AgentDirectory);

const request = (agent: string, extra: Partial<AgentRequest> = {}): AgentRequest => ({
  session_id: "alice-s1",
  turn_id: 1,
  agent_id: agent,
  wave: 0,
  mode: "respond",
  round: 0,
  timeout_ms: 5_000,
  context: agentContext({ user_message: "When does the zebra snapshot run?" }),
  ...extra,
});

/** Runs one call through the layer; what the agent was asked, and the searches made. */
async function call(req: AgentRequest, search: KnowledgeSearch, tenants = new TurnTenants()) {
  const searches: { tenant: string | null; request: KnowledgeSearchRequest }[] = [];
  const layer = knowledgeRetrievalInterceptor({
    search: (tenant, request, signal) => {
      searches.push({ tenant, request });
      return search(tenant, request, signal);
    },
    directory,
    tenants,
    arena: DEFAULT_ARENA_POLICY,
    log: silentLogger,
  });
  let asked: AgentRequest | undefined;
  await layer.callAgent!({ request: req, signal: new AbortController().signal }, async (input) => {
    asked = input.request;
    return {} as AgentReply;
  });
  return { asked: asked!, searches };
}

const aliceTurn = () => {
  const tenants = new TurnTenants();
  tenants.set("alice-s1", 1, "alice");
  return tenants;
};

describe("the knowledge layer", () => {
  it("searches a pipeline agent's collections as the turn's tenant, and gives it the passages", async () => {
    const { asked, searches } = await call(request("acme.librarian"), async () => [hit], aliceTurn());
    expect(searches).toEqual([
      {
        tenant: "alice",
        request: { collections: ["handbook"], query: "When does the zebra snapshot run?", limit: 8 },
      },
    ]);
    const { doc_id: _docId, ...passage } = hit;
    expect(asked.context.knowledge).toEqual([passage]);
  });

  it("searches nothing for an agent that names no collection, or in a deliberation round", async () => {
    const none = await call(request("acme.reader"), async () => [hit], aliceTurn());
    expect(none.searches).toEqual([]);
    expect(none.asked.context.knowledge).toBeUndefined();
    const revising = await call(
      request("acme.librarian", { mode: "revise", round: 1 }),
      async () => [hit],
      aliceTurn(),
    );
    expect(revising.searches).toEqual([]);
  });

  it("searches a recipe node's collections, not its agent's", async () => {
    const recipe = { recipe: "r", node: "answer", inputs: {} };
    const named = await call(
      request("acme.reader", { recipe, knowledge: ["runbooks"] }),
      async () => [hit],
      aliceTurn(),
    );
    expect(named.searches.map((search) => search.request.collections)).toEqual([["runbooks"]]);
    const unnamed = await call(request("acme.librarian", { recipe }), async () => [hit], aliceTurn());
    expect(unnamed.searches).toEqual([]);
  });

  it("reads nothing for a turn whose tenant it was not told", async () => {
    const { asked, searches } = await call(request("acme.librarian"), async () => [hit]);
    expect(searches).toEqual([]);
    expect(asked.context.knowledge).toBeUndefined();
  });

  it("goes on without passages when the knowledge workers do not answer", async () => {
    const { asked } = await call(
      request("acme.librarian"),
      async () => {
        throw new Error("no knowledge worker answered");
      },
      aliceTurn(),
    );
    expect(asked.context.knowledge).toBeUndefined();
  });
});
