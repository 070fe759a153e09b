/** How long an answer is kept for a repeat of its request: a takeover asks again within seconds. */
const DEFAULT_TTL_MS = 60_000;
/** The most answers kept (the oldest go first): a few megabytes at most, whatever the load. */
const DEFAULT_MAX = 4_096;

interface Step {
  reply: Promise<Uint8Array>;
  at: number;
}

/**
 * A worker's answers by step (a request's identity: the turn, the agent, its
 * wave and round…), so that the runner that takes a turn over from a dead one
 * and asks a step again joins the call still under way, or gets the answer
 * already given, instead of doing the work again (a model call, tokens, a
 * different answer). Failures are not kept: asking again tries again. In
 * memory, bounded by age and count: a worker that restarts does the work again.
 */
export class StepReplies {
  readonly #steps = new Map<string, Step>();

  constructor(
    private readonly ttlMs = DEFAULT_TTL_MS,
    private readonly max = DEFAULT_MAX,
  ) {}

  /** The reply of step `key`: the one under way or given, else `work`'s (kept once it succeeds). */
  reply(key: string, work: () => Promise<Uint8Array>): Promise<Uint8Array> {
    const now = Date.now();
    const known = this.#steps.get(key);
    if (known && now - known.at <= this.ttlMs) return known.reply;
    this.#steps.delete(key);
    const step = { reply: work(), at: now };
    this.#steps.set(key, step);
    step.reply.catch(() => {
      if (this.#steps.get(key) === step) this.#steps.delete(key);
    });
    if (this.#steps.size > this.max) this.#steps.delete(this.#steps.keys().next().value as string);
    return step.reply;
  }

  /** How many steps are kept. */
  get size(): number {
    return this.#steps.size;
  }
}
