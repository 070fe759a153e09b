import type {
  MemoryCommitReply,
  MemoryItem,
  MemoryRetrieveReply,
  MemoryRetrieveRequest,
  MemorySearchReply,
  MemorySearchRequest,
} from "../contracts/memory.ts";
import type { TurnWarning } from "../contracts/turn.ts";
import type { Episode } from "../contracts/workspace.ts";
import type { ChatModel } from "../llm/model.ts";
import type { EpisodeStore } from "./episodeStore.ts";
import type { MemoryGraphStore } from "./graph/store.ts";
import type { MemoryNode } from "./graph/types.ts";
import {
  extractLearning,
  type Fact,
  initialPersona,
  type MemoryPhase,
  type MergeChanges,
  mergeLearning,
  type PersonaState,
  personaTurn,
  phaseWarning,
  type RankItem,
  rankMemory,
  type Thread,
} from "./learn/index.ts";

/** How a session's memory learns and recalls. Every field has a default. */
export interface SessionMemoryOptions {
  /** The model facts and threads are extracted with; absent: the deterministic offline extractor. */
  model?: ChatModel | undefined;
  /** The persona evolves every this many turns. Default 5 (`CONCLAVE_PERSONA_EVERY`). */
  personaEvery?: number;
  /** Most tokens of facts and threads a turn's context gets. Default 300. */
  budgetTokens?: number;
}

const RUNTIME_STATE = "runtime_state";
const PERSONA = "persona";
const factId = (key: string) => `fact.${safeId(key)}`;
const threadId = (key: string) => `thread.${safeId(key)}`;
const safeId = (key: string) => key.replace(/[^A-Za-z0-9_.:-]/g, "-").slice(0, 110);

/** What the session's runtime-state node keeps across restarts: the cadence, and the persona. */
interface RuntimeState {
  /** The last turn whose learning was committed (a commit of it again is not learned twice). */
  last_extraction_turn: number;
  persona: PersonaState;
}

const factOf = (node: MemoryNode): Fact => ({
  key: String(node.data.key),
  text: node.text,
  topics: [...node.topics],
  recurrence: node.recurrence,
  created_at: Number(node.data.created_turn ?? 0),
  updated_at: Number(node.data.updated_turn ?? 0),
});

const threadOf = (node: MemoryNode): Thread => ({
  key: String(node.data.key),
  text: node.text,
  topics: [...node.topics],
  status: node.data.status === "closed" ? "closed" : "open",
  opened_at_turn: Number(node.data.opened_at_turn ?? 0),
  ...(node.data.closed_at_turn !== undefined ? { closed_at_turn: Number(node.data.closed_at_turn) } : {}),
  recurrence: node.recurrence,
  updated_at: Number(node.data.updated_turn ?? 0),
});

const isFact = (node: MemoryNode) => node.kind === "semantic" && node.data.fact === true;
const isThread = (node: MemoryNode) => node.kind === "semantic" && node.data.thread === true;

/**
 * A session's memory that learns (the memory service's logic): after each
 * turn it writes the episode, extracts user facts and open threads (the
 * model with structured output, or the offline extractor), merges them into
 * the graph (a fact's key updates it; a thread closes when a later turn
 * resolves it), evolves the persona on its cadence and persists the runtime
 * state. A phase that fails is a warning naming it: the turn's reply stands.
 * Before each turn it ranks facts and open threads for the message, within a
 * token budget.
 */
export class SessionMemory {
  readonly #personaEvery: number;
  readonly #budgetTokens: number;
  /** Rank items by the node array they were made from (facts and open threads; everything). */
  readonly #openItems = new WeakMap<readonly MemoryNode[], readonly RankItem[]>();
  readonly #allItems = new WeakMap<readonly MemoryNode[], readonly RankItem[]>();

  constructor(
    private readonly graph: MemoryGraphStore,
    private readonly episodes: EpisodeStore,
    private readonly options: SessionMemoryOptions = {},
  ) {
    this.#personaEvery = options.personaEvery ?? 5;
    this.#budgetTokens = options.budgetTokens ?? 300;
  }

  async commit(input: Episode): Promise<MemoryCommitReply> {
    const episode = { ...input, ts: input.ts || Date.now() };
    const sessionId = episode.session_id;
    const warnings: TurnWarning[] = [];
    const phase = async <T>(name: MemoryPhase, work: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await work();
      } catch (error) {
        warnings.push(phaseWarning(name, error));
        return undefined;
      }
    };
    // The turn waits for its memory: reads and writes go out together, not one after another.
    const [stored, state, known] = await Promise.all([
      phase("episode_write", async () => {
        await this.episodes.commit(episode);
        return true;
      }),
      phase("runtime_state_persist", () => this.#runtimeState(sessionId)),
      phase("fact_extraction", () => this.graph.nodes(sessionId, "semantic")),
    ]);
    if (state && state.last_extraction_turn >= episode.turn_id) {
      // Committed before (a turn taken over commits again): its learning is in already.
      return { summary: `turn ${episode.turn_id} was committed before`, stored: stored === true };
    }
    const learned = known
      ? await phase("fact_extraction", async () => {
          const facts = known.filter(isFact).map(factOf);
          const threads = known.filter(isThread).map(threadOf);
          const learning = await extractLearning(
            { user_message: episode.user_text, reply: episode.response, turn_id: episode.turn_id },
            this.options.model,
            { openThreads: threads.filter((thread) => thread.status === "open") },
          );
          return { learning, merged: mergeLearning({ facts, threads }, learning, episode.turn_id) };
        })
      : undefined;
    const persona = state
      ? await phase("persona_evolution", async () =>
          personaTurn(state.persona, this.#personaEvery, () => signalsOf(learned?.merged)),
        )
      : undefined;
    const writes: Promise<unknown>[] = [];
    if (learned) {
      writes.push(
        phase("episode_write", () =>
          this.graph.upsertNode({
            id: `episode.${episode.turn_id}`,
            session_id: sessionId,
            kind: "episodic",
            text: `${episode.user_text} → ${episode.response}`.slice(0, 4_000),
            topics: learned.learning.episode.topics.slice(0, 32),
            data: { turn_id: episode.turn_id, tools: learned.learning.episode.tools },
          }),
        ),
        phase("pattern_persistence", () => this.#persist(sessionId, learned.merged)),
      );
    }
    if (persona?.evolved)
      writes.push(
        phase("persona_evolution", () =>
          this.graph.upsertNode({
            id: PERSONA,
            session_id: sessionId,
            kind: "persona",
            text: Object.keys(persona.state.traits).join(", "),
            topics: [],
            data: { traits: persona.state.traits, evolved_at_turn: episode.turn_id },
          }),
        ),
      );
    if (state)
      writes.push(
        phase("runtime_state_persist", () =>
          this.graph.upsertNode({
            id: RUNTIME_STATE,
            session_id: sessionId,
            kind: "runtime_state",
            text: "runtime state",
            topics: [],
            // A persona that could not evolve keeps its cadence as it was: the next turn tries again.
            data: { last_extraction_turn: episode.turn_id, persona: persona?.state ?? state.persona },
          }),
        ),
      );
    await Promise.all(writes);
    const changes = learned?.merged.changes;
    const summary = changes
      ? `episode of turn ${episode.turn_id}; facts +${changes.facts_added.length} ~${changes.facts_updated.length}; threads +${changes.threads_opened.length} closed ${changes.threads_closed.length}`
      : `episode of turn ${episode.turn_id}`;
    return { summary, stored: stored === true, ...(warnings.length > 0 ? { warnings } : {}) };
  }

  /** Recent episodes, and the facts and open threads that fit the message best, within the budget. */
  async retrieve(request: MemoryRetrieveRequest): Promise<MemoryRetrieveReply> {
    const [episodes, items] = await Promise.all([
      this.episodes.recent(request.session_id, request.turn_id, request.limit),
      this.#items(request.session_id, false),
    ]);
    const ranked = rankMemory(items, request.user_message, { budgetTokens: this.#budgetTokens });
    return {
      episodes,
      user_facts: ranked.filter((item) => item.kind === "fact").map((item) => item.text),
      open_threads: ranked.filter((item) => item.kind === "thread").map((item) => item.text),
    };
  }

  /** Everything the session's memory holds about `query` (facts, threads open or closed, episodes), best first. */
  async search(request: MemorySearchRequest): Promise<MemorySearchReply> {
    const items = await this.#items(request.session_id, true);
    const ranked = rankMemory(items, request.query, { budgetTokens: Number.MAX_SAFE_INTEGER });
    return {
      items: ranked.slice(0, request.limit).map(
        (item): MemoryItem => ({
          id: item.id,
          kind: item.kind,
          text: item.text,
          topics: [...item.topics],
          recurrence: item.recurrence,
          updated_at: item.updated_at,
        }),
      ),
    };
  }

  async #items(sessionId: string, all: boolean): Promise<readonly RankItem[]> {
    const nodes = await this.graph.nodes(sessionId);
    // The store hands back the same array until the session changes: its rank items are made once per change.
    const cache = all ? this.#allItems : this.#openItems;
    let items = cache.get(nodes);
    if (!items) {
      items = nodes.flatMap((node): RankItem[] => {
        const base = { id: node.id, text: node.text, topics: node.topics, recurrence: node.recurrence };
        if (isFact(node)) return [{ ...base, kind: "fact", updated_at: Number(node.data.updated_turn ?? 0) }];
        if (isThread(node) && (all || node.data.status !== "closed"))
          return [{ ...base, kind: "thread", updated_at: Number(node.data.updated_turn ?? 0) }];
        if (all && node.kind === "episodic")
          return [{ ...base, kind: "episode", updated_at: Number(node.data.turn_id) }];
        return [];
      });
      cache.set(nodes, items);
    }
    return items;
  }

  async #runtimeState(sessionId: string): Promise<RuntimeState> {
    const node = await this.graph.node(sessionId, RUNTIME_STATE);
    const data = node?.data as Partial<RuntimeState> | undefined;
    return {
      last_extraction_turn: Number(data?.last_extraction_turn ?? 0),
      persona: data?.persona ?? initialPersona(),
    };
  }

  async #persist(
    sessionId: string,
    merged: { facts: Fact[]; threads: Thread[]; changes: MergeChanges },
  ): Promise<void> {
    const changed = new Set([
      ...merged.changes.facts_added,
      ...merged.changes.facts_updated,
      ...merged.changes.threads_opened,
      ...merged.changes.threads_reopened,
      ...merged.changes.threads_closed,
    ]);
    const writes: Promise<unknown>[] = [];
    for (const fact of merged.facts.filter((candidate) => changed.has(candidate.key)))
      writes.push(
        this.graph.upsertNode({
          id: factId(fact.key),
          session_id: sessionId,
          kind: "semantic",
          text: fact.text,
          topics: fact.topics.slice(0, 32),
          recurrence: fact.recurrence,
          data: { fact: true, key: fact.key, created_turn: fact.created_at, updated_turn: fact.updated_at },
        }),
      );
    for (const thread of merged.threads.filter((candidate) => changed.has(candidate.key)))
      writes.push(
        this.graph.upsertNode({
          id: threadId(thread.key),
          session_id: sessionId,
          kind: "semantic",
          text: thread.text,
          topics: thread.topics.slice(0, 32),
          recurrence: thread.recurrence,
          data: {
            thread: true,
            key: thread.key,
            status: thread.status,
            opened_at_turn: thread.opened_at_turn,
            ...(thread.closed_at_turn !== undefined ? { closed_at_turn: thread.closed_at_turn } : {}),
            updated_turn: thread.updated_at,
          },
        }),
      );
    await Promise.all(writes);
  }
}

/** What the persona evolves from: the topics of what memory holds, how much it knows, what is left open. */
function signalsOf(merged: { facts: Fact[]; threads: Thread[] } | undefined) {
  const topics: Record<string, number> = {};
  for (const item of [...(merged?.facts ?? []), ...(merged?.threads ?? [])])
    for (const topic of item.topics) topics[topic] = (topics[topic] ?? 0) + 1;
  return {
    topics,
    facts: merged?.facts.length ?? 0,
    threads_open: merged?.threads.filter((thread) => thread.status === "open").length ?? 0,
  };
}
