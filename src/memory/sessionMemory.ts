import type {
  MemoryCommitReply,
  MemoryRetrieveReply,
  MemoryRetrieveRequest,
  MemorySearchReply,
  MemorySearchRequest,
} from "../contracts/memory.ts";
import type { ChatModel } from "../contracts/model.ts";
import type { TurnWarning } from "../contracts/turn.ts";
import { addUsage, MEMORY_EMBEDDINGS_ACTOR, MEMORY_EXTRACTION_ACTOR, noUsage, type Usage } from "../contracts/usage.ts";
import type { Episode } from "../contracts/workspace.ts";
import type { Embedder } from "../llm/embeddings.ts";
import type { EpisodeStore } from "./episodeStore.ts";
import type { MemoryGraphStore } from "./graph/store.ts";
import type { MemoryNode, MemoryNodeInput } from "./graph/types.ts";
import { type InsightsPlan, MemoryInsights, planInsights, priorValues, projectedNodes } from "./insights.ts";
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
  type Thread,
} from "./learn/index.ts";
import {
  defaultPatchAdapters,
  type PatchAdapter,
  PatchAdapterRegistry,
  type ProceduralPatch,
  proceduresSummary,
  recordPatches,
} from "./procedural/index.ts";
import { MemoryRecall } from "./recall.ts";
import { changedNodes, embedNodes, episodeNode, isFact, isThread, turnEdges } from "./turnNodes.ts";

/** How a session's memory learns and recalls. Every field has a default. */
export interface SessionMemoryOptions {
  /** The model facts and threads are extracted with; absent: the deterministic offline extractor. */
  model?: ChatModel | undefined;
  /** The persona evolves every this many turns. Default 5 (`CONCLAVE_PERSONA_EVERY`). */
  personaEvery?: number;
  /**
   * Adapters of the procedural patches a turn teaches, chosen by label (exact, else the longest
   * dotted prefix). Default {@link defaultPatchAdapters} (the `style` adapter).
   */
  patchAdapters?: readonly PatchAdapter[] | undefined;
  /** Runs the patches no adapter's label covers. Default: one that records them as `noted`. */
  fallbackAdapter?: PatchAdapter | undefined;
  /** Most tokens of facts and threads a turn's context gets. Default 300. */
  budgetTokens?: number;
  /**
   * Embeds what memory stores and the message it ranks for (`CONCLAVE_EMBEDDING_MODEL`); absent:
   * ranking without embeddings (topic overlap, then recurrence and recency). See {@link SessionMemory}.
   */
  embedder?: Embedder | undefined;
  /** Told of an embeddings call that failed (memory went on without its vectors): for logs. */
  onEmbeddingError?: (error: unknown, during: "commit" | "retrieve" | "search") => void;
}

const RUNTIME_STATE = "runtime_state";
const PERSONA = "persona";

/** What the session's runtime-state node keeps across restarts: the cadence, and the persona. */
interface RuntimeState {
  /** The last turn whose learning was committed (a commit of it again is not learned twice). */
  last_extraction_turn: number;
  persona: PersonaState;
  /** The marker of the graph the insights were last derived from (src/memory/insights.ts). */
  insights_marker?: string | undefined;
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

/**
 * A session's memory that learns (the memory service's logic): after each
 * turn it writes the episode, extracts user facts and open threads (the
 * model with structured output, or the offline extractor), merges them into
 * the graph (a fact's key updates it; a thread closes when a later turn
 * resolves it), evolves the persona on its cadence and persists the runtime
 * state. A phase that fails is a warning naming it: the turn's reply stands.
 * Before each turn its recall ({@link MemoryRecall}) ranks facts and open
 * threads for the message, within a token budget, and the session's episodes.
 *
 * With an `embedder`, the nodes a turn writes (its episode, the facts and
 * threads it changed) get their vectors from one embeddings call, and each
 * retrieval embeds its message (one call) to order items of equal topic
 * overlap by similarity. An embeddings call that fails costs only the vectors:
 * the nodes are stored without them (warning `memory_pattern_persistence`),
 * and a retrieval ranks without them.
 */
export class SessionMemory {
  readonly #personaEvery: number;
  readonly #patches: PatchAdapterRegistry;
  readonly #recall: MemoryRecall;
  /** The session's insights and the review of its facts' changes (docs/memory.md, "Insights"). */
  readonly insights: MemoryInsights;

  constructor(
    private readonly graph: MemoryGraphStore,
    private readonly episodes: EpisodeStore,
    private readonly options: SessionMemoryOptions = {},
  ) {
    this.#personaEvery = options.personaEvery ?? 5;
    this.#recall = new MemoryRecall(graph, episodes, {
      budgetTokens: options.budgetTokens ?? 300,
      embedder: options.embedder,
      onEmbeddingError: options.onEmbeddingError,
    });
    this.insights = new MemoryInsights(graph);
    this.#patches = new PatchAdapterRegistry(options.patchAdapters ?? defaultPatchAdapters(), {
      fallback: options.fallbackAdapter,
    });
  }

  async commit(input: Episode): Promise<MemoryCommitReply> {
    const episode = { ...input, ts: input.ts || Date.now() };
    const sessionId = episode.session_id;
    const warnings: TurnWarning[] = [];
    // The tokens of the model calls this commit makes, by source: the turn's cost counts them.
    const usage: Record<string, Usage> = {};
    const used = (source: string) => (call: Usage) => {
      usage[source] = addUsage(usage[source] ?? noUsage(), call);
    };
    const phase = async <T>(name: MemoryPhase, work: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await work();
      } catch (error) {
        warnings.push(phaseWarning(name, error));
        return undefined;
      }
    };
    // The turn waits for its memory: reads and writes go out together, not one after another. The episode's
    // write goes out with the graph's writes (nothing learned depends on it), so they take one round trip.
    const writeEpisode = () =>
      phase("episode_write", async () => {
        await this.episodes.commit(episode);
        return true;
      });
    const [state, known] = await Promise.all([
      phase("runtime_state_persist", () => this.#runtimeState(sessionId)),
      phase("fact_extraction", () => this.graph.nodes(sessionId, "semantic")),
    ]);
    if (state && state.last_extraction_turn >= episode.turn_id) {
      // Committed before (a turn taken over commits again): its learning is in already.
      return { summary: `turn ${episode.turn_id} was committed before`, stored: (await writeEpisode()) === true };
    }
    const learned = known
      ? await phase("fact_extraction", async () => {
          const facts = known.filter(isFact).map(factOf);
          const threads = known.filter(isThread).map(threadOf);
          const learning = await extractLearning(
            {
              user_message: episode.user_text,
              reply: episode.response,
              turn_id: episode.turn_id,
              ...(episode.tools_invoked ? { tools: episode.tools_invoked } : {}),
            },
            this.options.model,
            { openThreads: threads.filter((thread) => thread.status === "open") },
          );
          if (learning.usage) used(MEMORY_EXTRACTION_ACTOR)(learning.usage);
          return { learning, merged: mergeLearning({ facts, threads }, learning, episode.turn_id) };
        })
      : undefined;
    const persona = state
      ? await phase("persona_evolution", async () =>
          personaTurn(state.persona, this.#personaEvery, () => signalsOf(learned?.merged)),
        )
      : undefined;
    // Procedural patches: each run by its adapter and recorded on its node, alongside the writes below.
    const patches = learned?.learning.patches;
    const procedures = patches && phase("pattern_persistence", () => this.#procedures(episode, patches, warnings));
    const writes: Promise<unknown>[] = [];
    let learnedWrites: Promise<boolean> = Promise.resolve(false);
    // A fact whose value changed keeps its earlier value, and an `evolves` edge to review (src/memory/insights.ts).
    const priors = learned
      ? priorValues(sessionId, known, learned.merged.facts, learned.merged.changes.facts_updated, episode.turn_id)
      : { nodes: [], edges: [] };
    let plan: InsightsPlan | null | undefined;
    if (learned) {
      const plain = [episodeNode(episode, learned.learning.episode), ...changedNodes(sessionId, learned.merged)];
      // The insights of the graph this commit makes, derived before it is stored and written with it.
      plan = await phase("runtime_state_persist", async () =>
        planInsights(
          sessionId,
          projectedNodes(await this.graph.nodes(sessionId), [...plain, ...priors.nodes]),
          state?.insights_marker,
        ),
      );
      // With an embedder, the vectors of what this turn writes, in one call; without them the nodes are stored all the same.
      const [episodeWrite, ...learnedNodes] =
        (await phase("pattern_persistence", () => this.#embedded(plain, known, used(MEMORY_EMBEDDINGS_ACTOR)))) ??
        plain;
      // Both stored (true), or a warning says which phase fell short (undefined).
      learnedWrites = Promise.all([
        phase("episode_write", () => this.graph.upsertNode(episodeWrite as MemoryNodeInput)),
        phase("pattern_persistence", () =>
          Promise.all([...learnedNodes, ...priors.nodes].map((node) => this.graph.upsertNode(node))),
        ),
      ]).then((stored) => stored.every((result) => result !== undefined));
      const insightsPlan = plan;
      if (insightsPlan)
        writes.push(phase("runtime_state_persist", () => Promise.all(this.insights.store(sessionId, insightsPlan))));
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
            data: {
              last_extraction_turn: episode.turn_id,
              persona: persona?.state ?? state.persona,
              // The graph the insights were derived from (src/memory/insights.ts): a refresh derives them again only past it.
              ...(plan || state.insights_marker ? { insights_marker: plan?.marker ?? state.insights_marker } : {}),
            },
          }),
        ),
      );
    const [learnedStored, stored] = await Promise.all([learnedWrites, writeEpisode(), ...writes]);
    const procedural = await procedures;
    if (learned && learnedStored) {
      // The graph's edges: the episode to what it taught, once every node they join is stored.
      const labels = procedural !== undefined ? (patches ?? []).map((patch) => patch.label) : [];
      const edges = [
        ...turnEdges(sessionId, episode.turn_id, taughtChanges(learned.merged, known), labels),
        ...priors.edges,
      ];
      if (edges.length > 0)
        await phase("pattern_persistence", () => Promise.all(edges.map((edge) => this.graph.addEdge(edge))));
    }
    const raised = plan?.raised.map((insight) => insight.id) ?? [];
    const changes = learned?.merged.changes;
    const summary = changes
      ? `episode of turn ${episode.turn_id}; facts +${changes.facts_added.length} ~${changes.facts_updated.length}; threads +${changes.threads_opened.length} closed ${changes.threads_closed.length}`
      : `episode of turn ${episode.turn_id}`;
    return {
      summary: summary + (procedural ?? ""),
      stored: stored === true,
      ...(warnings.length > 0 ? { warnings } : {}),
      ...(Object.keys(usage).length > 0 ? { usage } : {}),
      ...(raised.length > 0 ? { insights: raised } : {}),
    };
  }

  /**
   * The facts and open threads that fit the message best, within the budget, and the `limit`
   * episodes (of turns before this one) that fit it best, and the procedures (see {@link MemoryRecall}).
   * `signal` aborts its embeddings call (the turn is over).
   */
  retrieve(request: MemoryRetrieveRequest, signal?: AbortSignal): Promise<MemoryRetrieveReply> {
    return this.#recall.retrieve(request, signal);
  }

  /** Everything the session's memory holds about `query` (facts, threads open or closed, episodes), best first. */
  search(request: MemorySearchRequest): Promise<MemorySearchReply> {
    return this.#recall.search(request);
  }

  /**
   * Forgets the session (it was erased): its graph store erases it (on
   * PostgreSQL, the session's rows are deleted) and drops its in-memory copy
   * (recall's rankings are keyed by that copy and go with it), so no search or
   * retrieval answers from what was erased, and no later turn loads it again.
   */
  async forget(sessionId: string): Promise<void> {
    await this.graph.eraseSession(sessionId);
  }

  /** The nodes with their vectors ({@link embedNodes}); as they are without an embedder. */
  async #embedded(
    nodes: MemoryNodeInput[],
    known: readonly MemoryNode[] | undefined,
    onUsage: (usage: Usage) => void,
  ): Promise<MemoryNodeInput[]> {
    const embedder = this.options.embedder;
    if (!embedder) return nodes;
    try {
      return await embedNodes(embedder, nodes, known, onUsage);
    } catch (error) {
      this.options.onEmbeddingError?.(error, "commit");
      throw error;
    }
  }

  /**
   * The turn's procedural patches, each run by its adapter and stored on its node with the result;
   * adapters that failed are one `memory_pattern_persistence` warning. The summary's part about them.
   */
  async #procedures(episode: Episode, patches: readonly ProceduralPatch[], warnings: TurnWarning[]): Promise<string> {
    const context = { session_id: episode.session_id, turn_id: episode.turn_id };
    const recorded = await recordPatches(this.graph, this.#patches, context, patches);
    const failed = recorded.results.filter(({ result }) => result.status === "failed");
    if (failed.length > 0) {
      const reasons = failed.map(
        ({ label, result }) => `patch adapter '${result.adapter}' on '${label}': ${result.detail}`,
      );
      warnings.push(phaseWarning("pattern_persistence", `failed: ${reasons.join("; ")}`));
    }
    return proceduresSummary(recorded);
  }

  async #runtimeState(sessionId: string): Promise<RuntimeState> {
    const node = await this.graph.node(sessionId, RUNTIME_STATE);
    const data = node?.data as Partial<RuntimeState> | undefined;
    return {
      last_extraction_turn: Number(data?.last_extraction_turn ?? 0),
      persona: data?.persona ?? initialPersona(),
      ...(typeof data?.insights_marker === "string" ? { insights_marker: data.insights_marker } : {}),
    };
  }
}

/**
 * The merge's changes without the facts only restated (same text, one more recurrence): a turn's
 * episode is joined to what it taught, not to everything it repeated, which would cost a write
 * for every turn that says again what memory knows.
 */
function taughtChanges(
  merged: { facts: Fact[]; changes: MergeChanges },
  known: readonly MemoryNode[] | undefined,
): MergeChanges {
  const before = new Map((known ?? []).filter(isFact).map((node) => [String(node.data.key), node.text]));
  const textOf = new Map(merged.facts.map((fact) => [fact.key, fact.text]));
  return {
    ...merged.changes,
    facts_updated: merged.changes.facts_updated.filter((key) => before.get(key) !== textOf.get(key)),
  };
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
