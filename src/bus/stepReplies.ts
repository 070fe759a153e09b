import type { SharedSteps } from "./sharedSteps.ts";

/** How long an answer is kept for a repeat of its request: a takeover asks again within seconds. */
const DEFAULT_TTL_MS = 60_000;
/** The most answers kept (the oldest go first): a few megabytes at most, whatever the load. */
const DEFAULT_MAX = 4_096;

interface Step {
  reply: Promise<Uint8Array>;
  at: number;
}

/** How long a repeat waits on another worker's answer when its endpoint names no deadline. */
const DEFAULT_WAIT_MS = 30_000;

/**
 * A worker's answers by step (a request's identity: the turn, the agent, its
 * wave and round…), so that the runner that takes a turn over from a dead one
 * (or resends a request) and asks a step again joins the call still under way,
 * or gets the answer already given, instead of doing the work again (a model
 * call, tokens, a different answer). Failures are not kept: asking again tries
 * again. Calls under way are joined in memory, on the worker running them;
 * with `shared`, a step asked of another worker of the service joins its call
 * or gets its answer through KV (src/bus/sharedSteps.ts). Answers are also
 * kept in memory, bounded by age and count.
 */
export class StepReplies {
  readonly #steps = new Map<string, Step>();

  constructor(
    private readonly ttlMs = DEFAULT_TTL_MS,
    private readonly max = DEFAULT_MAX,
    private readonly shared?: Pick<SharedSteps, "run">,
  ) {}

  /**
   * The reply of step `key`: the one under way or given, else `work`'s (kept once it succeeds).
   * `waitMs` bounds the wait on another worker running the step (the step's own deadline).
   */
  reply(key: string, work: () => Promise<Uint8Array>, waitMs = DEFAULT_WAIT_MS): Promise<Uint8Array> {
    const now = Date.now();
    const known = this.#steps.get(key);
    if (known && now - known.at <= this.ttlMs) return known.reply;
    this.#steps.delete(key);
    const step = { reply: this.shared ? this.shared.run(key, work, waitMs) : work(), at: now };
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
