/**
 * Skills in a worker: the directory loaded and indexed once, and for each
 * agent request the skills its user message loads, instructions read, for
 * `ctx.skills`.
 */
import type { Usage } from "../contracts/usage.ts";
import { messageOf, singleLine } from "../errors.ts";
import { createEmbedder, type Embedder, embeddingConfigFromEnv, offlineEmbedder } from "../llm/embeddings.ts";
import type { LlmConfig } from "../llm/index.ts";
import { type SkillDefinition, SkillDefinitionError } from "./definition.ts";
import { instructionsOf, loadSkills, type Skill } from "./load.ts";
import { type SkillsChange, skillsChange } from "./registryChange.ts";
import { SkillRouter, type SkillRouterOptions } from "./router.ts";

/** A loaded skill as an agent is given it (`ctx.skills`). */
export interface AgentSkill {
  readonly id: string;
  readonly name: string;
  /** Its instructions (markdown or plain text), read from its file or `instructions_uri`. */
  readonly instructions: string;
}

/**
 * The skills an agent may activate and complete (`ctx.skills.activate`,
 * `complete`): a worker's skills directory ({@link WorkerSkills}).
 */
export interface SkillCatalog {
  /** The definition of the skill with this id (undefined: no such skill). */
  definition(id: string): SkillDefinition | undefined;
  /** Every skill's id, in the directory's order. */
  ids(): readonly string[];
  /** The skill with its instructions read (rejects when they cannot be). */
  load(id: string): Promise<AgentSkill>;
}

/** What a worker's skills are: a directory, and how its lazy skills are picked. */
export interface WorkerSkillsOptions extends SkillRouterOptions {
  /** The skills directory (see docs/skills.md for its files). */
  dir: string;
}

/** Messages whose selection is kept: the agents of one turn on one worker share the message's. */
const SELECTIONS_KEPT = 64;

/**
 * The embedder skills are routed with: the configured embedding model
 * (`CONCLAVE_EMBEDDING_MODEL` on the LLM's server) when there is one, else the
 * offline embedder, wider than memory's (many skills, few collisions).
 *
 * @param llm The LLM server, as for `embeddingConfigFromEnv`; default: read from `env`.
 */
export function skillsEmbedder(env: NodeJS.ProcessEnv = process.env, llm?: LlmConfig | null): Embedder {
  const config = embeddingConfigFromEnv(env, llm);
  return (config?.kind === "openai" ? createEmbedder(config) : undefined) ?? offlineEmbedder(256);
}

/**
 * A worker's skills: loaded and indexed once ({@link WorkerSkills.open}), then
 * asked per request ({@link WorkerSkills.forMessage}). An embeddings failure or
 * an instructions file gone missing is warned about, never fatal: the agent
 * then gets the eager skills, or the others.
 */
export class WorkerSkills implements SkillCatalog {
  #skills: readonly Skill[];
  #router: SkillRouter;
  readonly #dir: string;
  readonly #warn: (message: string) => void;
  readonly #embedder: Embedder;
  readonly #routing: SkillRouterOptions;
  readonly #selections = new Map<string, Promise<AgentSkill[]>>();
  /** Active skills this worker lacks that it warned about already: each is warned about once. */
  readonly #missing = new Set<string>();
  #refreshing: Promise<unknown> = Promise.resolve();

  private constructor(
    skills: readonly Skill[],
    router: SkillRouter,
    options: { dir: string; embedder: Embedder; routing: SkillRouterOptions },
    warn: (message: string) => void,
  ) {
    this.#skills = skills;
    this.#router = router;
    this.#dir = options.dir;
    this.#embedder = options.embedder;
    this.#routing = options.routing;
    this.#warn = warn;
  }

  /**
   * Loads the directory (a SkillDefinitionError naming the file and field for a bad one) and
   * embeds the lazy skills' trigger intents.
   */
  static async open(
    options: WorkerSkillsOptions,
    embedder: Embedder,
    warn: (message: string) => void = () => {},
  ): Promise<WorkerSkills> {
    const { threshold, maxLazy } = options;
    if (threshold !== undefined && !(threshold >= 0 && threshold <= 1))
      throw new SkillDefinitionError(`skills threshold must be a number from 0 to 1, not ${threshold}`);
    if (maxLazy !== undefined && !(Number.isInteger(maxLazy) && maxLazy >= 0 && maxLazy <= 100))
      throw new SkillDefinitionError(`skills maxLazy must be a whole number from 0 to 100, not ${maxLazy}`);
    const skills = loadSkills(options.dir);
    const { dir: _dir, ...routing } = options;
    const router = await SkillRouter.index(skills, embedder, routing);
    return new WorkerSkills(skills, router, { dir: options.dir, embedder, routing }, warn);
  }

  /** The skills directory. */
  get dir(): string {
    return this.#dir;
  }

  /**
   * Reads the directory again and indexes it: the skills added, removed and
   * changed (a definition that differs). A directory that does not load (a bad
   * skill file) or cannot be indexed changes nothing: the answer is its one-line
   * error, and the skills stay as they were. Refreshes run one at a time.
   */
  refresh(): Promise<SkillsChange | { error: string }> {
    const next = this.#refreshing.then(() => this.#reload());
    this.#refreshing = next.catch(() => undefined);
    return next;
  }

  async #reload(): Promise<SkillsChange | { error: string }> {
    let skills: Skill[];
    let router: SkillRouter;
    try {
      skills = loadSkills(this.#dir);
      router = await SkillRouter.index(skills, this.#embedder, this.#routing);
    } catch (error) {
      return { error: singleLine(messageOf(error), 500) };
    }
    const change = skillsChange(this.#skills, skills);
    this.#skills = skills;
    this.#router = router;
    this.#selections.clear();
    return change;
  }

  /** How many skills were loaded from the directory. */
  get size(): number {
    return this.#skills.length;
  }

  definition(id: string): SkillDefinition | undefined {
    return this.#skills.find((skill) => skill.definition.id === id)?.definition;
  }

  ids(): readonly string[] {
    return this.#skills.map((skill) => skill.definition.id);
  }

  async load(id: string): Promise<AgentSkill> {
    const skill = this.#skills.find((candidate) => candidate.definition.id === id);
    if (!skill) throw new SkillDefinitionError(`no skill ${id} in ${this.#dir}`);
    return { id, name: skill.definition.name, instructions: await instructionsOf(skill, this.#dir) };
  }

  /**
   * The skills `message` loads, with their instructions (eager ones first, then lazy ones by closeness),
   * then each of `active` (the request's `active_skills`: activated for the session, or declared by its
   * recipe) the message did not load. An active skill this worker lacks is warned about once and left out.
   * `onUsage` hears the usage of the embeddings call that routed the message, when this call made it
   * (a message routed already, for another agent of the turn, costs nothing more).
   */
  async forMessage(
    message: string,
    onUsage?: (usage: Usage) => void,
    active: readonly string[] = [],
  ): Promise<AgentSkill[]> {
    let selection = this.#selections.get(message);
    if (!selection) {
      selection = this.#select(message, onUsage);
      this.#selections.set(message, selection);
      if (this.#selections.size > SELECTIONS_KEPT) this.#selections.delete(this.#selections.keys().next().value!);
    }
    const routed = await selection;
    // Most requests carry no active skills: the routed selection as it is.
    return active.length === 0 ? routed : [...routed, ...(await this.#active(active, routed))];
  }

  /** The active skills not among `routed`, with their instructions; those this worker lacks, warned about once. */
  async #active(active: readonly string[], routed: readonly AgentSkill[]): Promise<AgentSkill[]> {
    const added: AgentSkill[] = [];
    for (const id of new Set(active)) {
      if (routed.some((skill) => skill.id === id)) continue;
      const skill = this.#skills.find((candidate) => candidate.definition.id === id);
      if (!skill) {
        if (!this.#missing.has(id)) {
          this.#missing.add(id);
          this.#warn(
            `skills: ${id} is not in ${this.#dir}: left out (activated for the session, or declared by its recipe)`,
          );
        }
        continue;
      }
      try {
        added.push({ id, name: skill.definition.name, instructions: await instructionsOf(skill, this.#dir) });
      } catch (error) {
        this.#warn(`skills: ${id} left out: ${singleLine(messageOf(error), 500)}`);
      }
    }
    return added;
  }

  async #select(message: string, onUsage?: (usage: Usage) => void): Promise<AgentSkill[]> {
    let loaded: readonly Skill[];
    try {
      loaded = (await this.#router.select(message, undefined, onUsage)).loaded;
    } catch (error) {
      // Not kept: the next request with this message tries the embedder again.
      this.#selections.delete(message);
      this.#warn(`skills: routing failed, only eager skills are loaded: ${singleLine(messageOf(error), 500)}`);
      loaded = this.#skills.filter((skill) => skill.definition.load_strategy === "eager");
    }
    const skills: AgentSkill[] = [];
    for (const skill of loaded) {
      try {
        const instructions = await instructionsOf(skill, this.#dir);
        skills.push({ id: skill.definition.id, name: skill.definition.name, instructions });
      } catch (error) {
        this.#warn(`skills: ${skill.definition.id} left out: ${singleLine(messageOf(error), 500)}`);
      }
    }
    return skills;
  }
}
