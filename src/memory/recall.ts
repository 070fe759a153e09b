import type {
  MemoryItem,
  MemoryRefs,
  MemoryRetrieveReply,
  MemoryRetrieveRequest,
  MemorySearchReply,
  MemorySearchRequest,
} from "../contracts/memory.ts";
import { MEMORY_EMBEDDINGS_ACTOR, type Usage } from "../contracts/usage.ts";
import type { Episode } from "../contracts/workspace.ts";
import type { Embedder } from "../llm/embeddings.ts";
import type { EpisodeStore } from "./episodeStore.ts";
import type { MemoryGraphStore } from "./graph/store.ts";
import type { MemoryNode } from "./graph/types.ts";
import { personaText, type RankItem, type RankOptions, rankMemory, topicsOf } from "./learn/index.ts";
import { procedureNodesOf } from "./procedural/index.ts";
import { episodeOfNode, isFact, isThread, toolsOfNode } from "./turnNodes.ts";

/** How recall ranks (see {@link MemoryRecall}). */
export interface MemoryRecallOptions {
  /** Most tokens of facts and threads a turn's context gets. */
  budgetTokens: number;
  /** Embeds the message to rank by, when the session holds vectors of this embedder. */
  embedder?: Embedder | undefined;
  /** Told of an embeddings call that failed (recall went on without it): for logs. */
  onEmbeddingError?: ((error: unknown, during: "retrieve" | "search") => void) | undefined;
}

/** An episodic node as ranked: episodes are chosen by count, not tokens, so each weighs one token (see `retrieve`). */
interface EpisodeItem extends RankItem {
  readonly node: MemoryNode;
}
/** The text of an {@link EpisodeItem}: one character, one token of the budget (`estimateTokens`). */
const ONE_TOKEN = "·";

/**
 * Recall, the reading half of a session's memory: before each turn, the facts
 * and open threads that fit its message within a token budget, the episodes
 * that fit it, and the procedures; on request, a search of everything. Ranked
 * by topic overlap, then embedding similarity (with an embedder, when the
 * session holds vectors of it), then recurrence and recency. Rank items are
 * made once per version of the session's nodes (the store hands back the same
 * array until the session changes).
 */
export class MemoryRecall {
  /** Rank items by the node array they were made from (facts and open threads; everything; episodes). */
  readonly #openItems = new WeakMap<readonly MemoryNode[], readonly RankItem[]>();
  readonly #allItems = new WeakMap<readonly MemoryNode[], readonly RankItem[]>();
  readonly #episodeItems = new WeakMap<readonly MemoryNode[], readonly EpisodeItem[]>();
  /** Whether any node of the array has a vector of the embedder: else a message's vector would change nothing. */
  readonly #hasVectors = new WeakMap<readonly MemoryNode[], boolean>();

  constructor(
    private readonly graph: MemoryGraphStore,
    private readonly episodes: EpisodeStore,
    private readonly options: MemoryRecallOptions,
  ) {}

  /**
   * The facts and open threads that fit the message best, within the budget, and the `limit`
   * episodes (of turns before this one) that fit it best, best first: by topic overlap, then
   * similarity (with an embedder), then recency, so the most recent when none is about the message.
   */
  async retrieve(request: MemoryRetrieveRequest, signal?: AbortSignal): Promise<MemoryRetrieveReply> {
    if (request.resolve) return this.resolve(request.session_id, request.resolve);
    const [nodes, procedural, persona] = await Promise.all([
      this.graph.nodes(request.session_id),
      this.graph.nodes(request.session_id, "procedural"),
      this.graph.nodes(request.session_id, "persona"),
    ]);
    let usage: Usage | undefined;
    const query = await this.#queryVector(nodes, request.user_message, "retrieve", signal, (used) => {
      usage = used;
    });
    // Started first: a session whose episodes are not in the graph reads them from the store meanwhile.
    const episodes = this.#rankedEpisodes(request, nodes, query);
    const ranked = rankMemory(this.#rankItems(nodes, false), request.user_message, {
      budgetTokens: this.options.budgetTokens,
      ...query,
    });
    const facts = ranked.filter((item) => item.kind === "fact");
    const threads = ranked.filter((item) => item.kind === "thread");
    const procedures = procedureNodesOf(procedural);
    const reply = replyOf(await episodes, facts, threads, procedures, persona[0]);
    // The message's embedding is a model call of the turn: its cost counts it.
    return usage ? { ...reply, usage: { [MEMORY_EMBEDDINGS_ACTOR]: usage } } : reply;
  }

  /**
   * The records `refs` names, as they are stored now, in their order: a read by id, nothing
   * ranked. A reference whose record is gone (its turn trimmed, its entry expired, the session
   * erased) resolves to nothing; `unresolved` counts them.
   */
  async resolve(sessionId: string, refs: MemoryRefs): Promise<MemoryRetrieveReply> {
    const nodes = await this.graph.nodes(sessionId);
    const byId = new Map(nodes.map((node) => [node.id, node]));
    const found = (ids: readonly string[], keep: (node: MemoryNode) => boolean) =>
      ids.flatMap((id) => {
        const node = byId.get(id);
        return node && keep(node) ? [node] : [];
      });
    const facts = found(refs.facts, isFact);
    const threads = found(refs.threads, isThread);
    const procedures = found(refs.procedures, (node) => node.kind === "procedural");
    const [persona] = found(refs.persona ?? [], (node) => node.kind === "persona");
    const episodes = (
      await Promise.all(
        refs.episodes.map(async (turn) => {
          const node = byId.get(`episode.${turn}`);
          const episode = node ? episodeOfNode(node) : null;
          // `recent` before turn + 1, one of them: exactly that turn's episode, by one direct get.
          return episode ?? (await this.episodes.recent(sessionId, turn + 1, 1))[0];
        }),
      )
    ).filter((episode): episode is Episode => episode !== undefined && refs.episodes.includes(episode.turn_id));
    const named =
      refs.episodes.length +
      refs.facts.length +
      refs.threads.length +
      refs.procedures.length +
      (refs.persona?.length ?? 0);
    const resolved = episodes.length + facts.length + threads.length + procedures.length + (persona ? 1 : 0);
    return { ...replyOf(episodes, facts, threads, procedures, persona), unresolved: named - resolved };
  }

  /** Everything the session's memory holds about `query` (facts, threads open or closed, episodes), best first. */
  async search(request: MemorySearchRequest): Promise<MemorySearchReply> {
    const nodes = await this.graph.nodes(request.session_id);
    const query = await this.#queryVector(nodes, request.query, "search");
    const tools = new Map(nodes.map((node) => [node.id, toolsOfNode(node)]));
    // With a tool: only the episodes whose turn invoked it (episodic nodes keep their tools lowercase).
    const tool = request.tool?.trim().toLowerCase();
    const items = this.#rankItems(nodes, true).filter(
      (item) => tool === undefined || (item.kind === "episode" && tools.get(item.id)?.includes(tool)),
    );
    const ranked = rankMemory(items, request.query, { budgetTokens: Number.MAX_SAFE_INTEGER, ...query });
    return {
      items: ranked.slice(0, request.limit).map((item): MemoryItem => {
        const used = item.kind === "episode" ? (tools.get(item.id) ?? []) : [];
        return {
          id: item.id,
          kind: item.kind,
          text: item.text,
          topics: [...item.topics],
          recurrence: item.recurrence,
          updated_at: item.updated_at,
          ...(used.length > 0 ? { tools: used } : {}),
        };
      }),
    };
  }

  /**
   * The episodes for a retrieval. Ranked among the session's episodic nodes (each one token, so
   * the budget is the count); rebuilt from their nodes, or read from the episode store for a node
   * that cannot tell (older, or cut). A session without episodic nodes (older than the graph):
   * the most recent episodes of the store.
   */
  async #rankedEpisodes(
    request: MemoryRetrieveRequest,
    nodes: readonly MemoryNode[],
    query: Pick<RankOptions, "embedding">,
  ): Promise<Episode[]> {
    const sessionId = request.session_id;
    if (request.limit <= 0) return [];
    let items = this.#episodeItemsOf(nodes);
    if (items.some((item) => item.updated_at >= request.turn_id))
      items = items.filter((item) => item.updated_at < request.turn_id);
    if (items.length === 0) return (await this.episodes.recent(sessionId, request.turn_id, request.limit)).reverse();
    const chosen = rankMemory(items, request.user_message, { budgetTokens: request.limit, ...query }) as EpisodeItem[];
    const episodes = await Promise.all(
      chosen.map(async (item) => {
        const episode = episodeOfNode(item.node);
        // `recent` before turn + 1, one of them: exactly that turn's episode, by one direct get.
        return episode ?? (await this.episodes.recent(sessionId, item.updated_at + 1, 1))[0];
      }),
    );
    return episodes.filter((episode) => episode !== undefined);
  }

  /**
   * The message's vector, as rank options: none without an embedder, for a message without
   * topics or a session without vectors (it would change no order), or when the call fails.
   */
  async #queryVector(
    nodes: readonly MemoryNode[],
    message: string,
    during: "retrieve" | "search",
    /** The turn's: an embeddings call left open when the turn is over is aborted. */
    signal?: AbortSignal,
    onUsage?: (usage: Usage) => void,
  ): Promise<Pick<RankOptions, "embedding">> {
    const embedder = this.options.embedder;
    if (!embedder || !this.#anyVector(nodes, embedder) || topicsOf(message).length === 0) return {};
    try {
      const [vector] = await embedder.embed([message], signal, onUsage);
      return vector ? { embedding: { query: vector } } : {};
    } catch (error) {
      if (!signal?.aborted) this.options.onEmbeddingError?.(error, during); // aborted: nobody waits for it
      return {};
    }
  }

  /** The node's vector, if the configured embedder made it (vectors of another model do not compare). */
  #vectorOf(node: MemoryNode): { embedding?: readonly number[] } {
    const embedder = this.options.embedder;
    return embedder && node.embedding && node.data.embedding_model === embedder.id ? { embedding: node.embedding } : {};
  }

  #anyVector(nodes: readonly MemoryNode[], embedder: Embedder): boolean {
    let any = this.#hasVectors.get(nodes);
    if (any === undefined) {
      any = nodes.some((node) => node.embedding !== undefined && node.data.embedding_model === embedder.id);
      this.#hasVectors.set(nodes, any);
    }
    return any;
  }

  /** Rank items of the facts and threads (open only, unless `all`; with the episodes if `all`). */
  #rankItems(nodes: readonly MemoryNode[], all: boolean): readonly RankItem[] {
    // The store hands back the same array until the session changes: its rank items are made once per change.
    const cache = all ? this.#allItems : this.#openItems;
    let items = cache.get(nodes);
    if (!items) {
      items = nodes.flatMap((node): RankItem[] => {
        const base = { id: node.id, text: node.text, topics: node.topics, recurrence: node.recurrence };
        const vector = this.#vectorOf(node);
        if (isFact(node))
          return [{ ...base, ...vector, kind: "fact", updated_at: Number(node.data.updated_turn ?? 0) }];
        if (isThread(node) && (all || node.data.status !== "closed"))
          return [{ ...base, ...vector, kind: "thread", updated_at: Number(node.data.updated_turn ?? 0) }];
        if (all && node.kind === "episodic")
          return [{ ...base, ...vector, kind: "episode", updated_at: Number(node.data.turn_id) }];
        return [];
      });
      cache.set(nodes, items);
    }
    return items;
  }

  /** Rank items of the episodic nodes with a turn number: one token each, so a budget of `limit` takes `limit`. */
  #episodeItemsOf(nodes: readonly MemoryNode[]): readonly EpisodeItem[] {
    let items = this.#episodeItems.get(nodes);
    if (!items) {
      items = nodes.flatMap((node): EpisodeItem[] => {
        const turn = node.data.turn_id;
        if (node.kind !== "episodic" || typeof turn !== "number" || !Number.isInteger(turn)) return [];
        const item = { id: node.id, kind: "episode" as const, text: ONE_TOKEN, topics: node.topics };
        return [{ ...item, ...this.#vectorOf(node), recurrence: node.recurrence, updated_at: turn, node }];
      });
      this.#episodeItems.set(nodes, items);
    }
    return items;
  }
}

/** A retrieval's reply: the records' text for the turn, and the references its log keeps instead. */
function replyOf(
  episodes: Episode[],
  facts: readonly { id: string; text: string }[],
  threads: readonly { id: string; text: string }[],
  procedures: readonly { id: string; text: string }[],
  personaNode?: MemoryNode,
): MemoryRetrieveReply {
  const traits = personaNode?.data.traits;
  const persona = traits && typeof traits === "object" ? personaText(traits as Record<string, number>) : "";
  return {
    episodes,
    user_facts: facts.map((item) => item.text),
    open_threads: threads.map((item) => item.text),
    procedures: procedures.map((item) => item.text),
    ...(persona ? { persona } : {}),
    refs: {
      episodes: episodes.map((episode) => episode.turn_id),
      facts: facts.map((item) => item.id),
      threads: threads.map((item) => item.id),
      procedures: procedures.map((item) => item.id),
      ...(persona && personaNode ? { persona: [personaNode.id] } : {}),
    },
  };
}
