/**
 * The pure logic of a memory that learns: topic tagging, what a turn teaches, merging it into
 * memory, ranking memory for a message, persona evolution on a cadence, and the warnings of the
 * memory commit's phases. No transport and no store: the graph store plugs these in.
 */

export { cosine, OFFLINE_EMBEDDING_DIMS, offlineEmbedding } from "./embedder.ts";
export {
  type ExtractOptions,
  extractLearning,
  extractOffline,
  type LearnedEpisode,
  type LearnedItem,
  type Learning,
  MEMORY_LEARNING_SCHEMA_NAME,
  type MemoryLearningAnswer,
  MemoryLearningSchema,
  type ThreadRef,
  type TurnToLearn,
} from "./extract.ts";
export {
  type Fact,
  type MemoryState,
  type MergeChanges,
  type MergeResult,
  mergeLearning,
  openThreads,
  type Thread,
} from "./merge.ts";
export {
  advanceTurn,
  evolvePersona,
  initialPersona,
  PERSONA_MAX_TOPIC_TRAITS,
  PERSONA_SMOOTHING,
  PERSONA_TEXT_MAX,
  PERSONA_TRAIT_FLOOR,
  type PersonaSignals,
  type PersonaState,
  personaText,
  personaTurn,
  shouldEvolve,
} from "./persona.ts";
export { MEMORY_PHASES, type MemoryPhase, phaseWarning } from "./phases.ts";
export { estimateTokens, type RankItem, type RankOptions, rankMemory } from "./rank.ts";
export { RESOLVE_COVERAGE, resolvesThread } from "./threadRules.ts";
export { MAX_TOPICS, slugOf, stemWord, topicOfWord, topicsOf, wordsOf } from "./topics.ts";
