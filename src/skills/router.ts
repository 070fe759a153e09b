import type { Usage } from "../contracts/usage.ts";
import type { Embedder } from "../llm/embeddings.ts";
import { cosine } from "../memory/learn/embedder.ts";
import type { Skill } from "./load.ts";

/** How a router picks lazy skills. */
export interface SkillRouterOptions {
  /** The least cosine similarity between a message and a lazy skill's `trigger_intent` to load it. Default 0.35. */
  threshold?: number;
  /** The most lazy skills loaded for one message (the closest first). Default 3. */
  maxLazy?: number;
}

/** The defaults of {@link SkillRouterOptions}. */
export const SKILL_ROUTER_DEFAULTS = { threshold: 0.35, maxLazy: 3 } as const;

/** One skill's place in a selection, and why it is (or is not) loaded. */
export interface SkillRank {
  id: string;
  strategy: Skill["definition"]["load_strategy"];
  /** Cosine similarity of the message to its `trigger_intent` (lazy skills); null for the others. */
  score: number | null;
  loaded: boolean;
  why: string;
}

/** What a message loads, and the whole ranking that explains it. */
export interface SkillSelection {
  /** The skills loaded, eager ones first, then lazy ones by score, then those asked for by name. */
  loaded: Skill[];
  /** Every skill: lazy ones by score (highest first), then the eager and user ones. */
  ranking: SkillRank[];
  threshold: number;
  /** The embedder's id (`offline:256`, `openai:text-embedding-3-small`). */
  embedder: string;
}

/**
 * Routes a message to skills: `eager` skills always load; a `lazy` one loads
 * when the message's embedding is within `threshold` cosine similarity of its
 * `trigger_intent`'s (at most `maxLazy`, the closest first); a `user` one when
 * the message names it (`/id`, or its name). The trigger intents are embedded
 * once, when the router is made ({@link SkillRouter.index}).
 */
export class SkillRouter {
  private constructor(
    private readonly skills: readonly Skill[],
    private readonly embedder: Embedder,
    private readonly intents: ReadonlyMap<string, number[]>,
    private readonly options: Required<SkillRouterOptions>,
  ) {}

  /** Embeds every lazy skill's trigger intent (one embeddings call) and returns the router. */
  static async index(
    skills: readonly Skill[],
    embedder: Embedder,
    options: SkillRouterOptions = {},
    signal?: AbortSignal,
  ): Promise<SkillRouter> {
    const lazy = skills.filter((skill) => skill.definition.load_strategy === "lazy");
    const vectors = await embedder.embed(
      lazy.map((skill) => skill.definition.trigger_intent as string),
      signal,
    );
    const intents = new Map(lazy.map((skill, index) => [skill.definition.id, vectors[index] ?? []]));
    return new SkillRouter(skills, embedder, intents, { ...SKILL_ROUTER_DEFAULTS, ...options });
  }

  /** The skills `message` loads, with the ranking of every skill and the reason for each; `onUsage` hears the embeddings call's usage. */
  async select(message: string, signal?: AbortSignal, onUsage?: (usage: Usage) => void): Promise<SkillSelection> {
    const { threshold, maxLazy } = this.options;
    const [vector] = this.intents.size > 0 ? await this.embedder.embed([message], signal, onUsage) : [[]];
    const lazy = this.skills
      .filter((skill) => skill.definition.load_strategy === "lazy")
      .map((skill) => ({ skill, score: cosine(vector ?? [], this.intents.get(skill.definition.id) ?? []) }))
      .sort((a, b) => b.score - a.score || a.skill.definition.id.localeCompare(b.skill.definition.id));
    const ranking: SkillRank[] = [];
    const loadedLazy: Skill[] = [];
    for (const { skill, score } of lazy) {
      const rounded = Math.round(score * 1000) / 1000;
      const above = score >= threshold;
      const loaded = above && loadedLazy.length < maxLazy;
      if (loaded) loadedLazy.push(skill);
      ranking.push({
        id: skill.definition.id,
        strategy: "lazy",
        score: rounded,
        loaded,
        why: loaded
          ? `${rounded} >= ${threshold}: close to its trigger intent`
          : above
            ? `${rounded} >= ${threshold}, but ${maxLazy} closer skills are loaded`
            : `${rounded} < ${threshold}: not close enough to its trigger intent`,
      });
    }
    const eager = this.skills.filter((skill) => skill.definition.load_strategy === "eager");
    for (const skill of eager)
      ranking.push({ id: skill.definition.id, strategy: "eager", score: null, loaded: true, why: "eager: always" });
    const asked = this.skills.filter(
      (skill) => skill.definition.load_strategy === "user" && namedIn(message, skill.definition),
    );
    for (const skill of this.skills.filter((s) => s.definition.load_strategy === "user")) {
      const loaded = asked.includes(skill);
      ranking.push({
        id: skill.definition.id,
        strategy: "user",
        score: null,
        loaded,
        why: loaded ? "the message asks for it" : `user: loaded when asked for (/${skill.definition.id})`,
      });
    }
    return { loaded: [...eager, ...loadedLazy, ...asked], ranking, threshold, embedder: this.embedder.id };
  }
}

/** The message names the skill: `/id` as a word, or its name. */
function namedIn(message: string, { id, name }: Skill["definition"]): boolean {
  const text = message.toLowerCase();
  const byId = new RegExp(`(^|\\s)/${id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?=$|[\\s.,;:!?])`);
  return byId.test(text) || text.includes(name.toLowerCase());
}
