/** How an adaptive limit moves: its bounds and where it starts. */
export interface AdaptiveLimitOptions {
  initial: number;
  min: number;
  max: number;
}

/** Samples in the smoothed run time (an exponential average over about this many turns). */
const SMOOTHING_SAMPLES = 10;
/** Samples per window of the baseline; each window lets it rise by BASELINE_DRIFT, so a slower workload becomes the new normal. */
const BASELINE_WINDOW = 1_000;
const BASELINE_DRIFT = 1.1;
/** Above this many times the baseline, turns are slowed by the load itself: fewer run at once. */
const SLOWED = 2;
/** Below this many times the baseline, more may run at once (when the places are used). */
const UNHURT = 1.5;

/**
 * How many turns may run at once, learnt from how long they take (a
 * delay-based limit, as TCP Vegas and Netflix's concurrency-limits do it).
 * While turns take about as long as they do on an idle runner (their model,
 * not the load, sets their time), the limit grows toward `max`; once running
 * more makes each slower (two cores shared by too many turns), it shrinks
 * toward `min`, so admitted turns run at near their unloaded speed and the
 * rest wait their turn. The baseline is the fastest smoothed run time seen,
 * let rise by a tenth every thousand turns (a workload that became slower); it
 * is learnt best from a low start, which is why the limit starts low.
 */
export class AdaptiveLimit {
  #limit: number;
  #smoothed: number | undefined;
  #baseline: number | undefined;
  #samples = 0;
  #sinceChange = 0;

  constructor(private readonly options: AdaptiveLimitOptions) {
    this.#limit = Math.min(options.max, Math.max(options.min, options.initial));
  }

  /** Turns that may run at once now. */
  get value(): number {
    return this.#limit;
  }

  /** A turn ended after holding its place `runMs`, with `running` places in use. */
  sample(runMs: number, running: number): void {
    this.#smoothed =
      this.#smoothed === undefined ? runMs : this.#smoothed + ((runMs - this.#smoothed) * 2) / (SMOOTHING_SAMPLES + 1);
    this.#samples += 1;
    if (this.#baseline === undefined || this.#smoothed < this.#baseline) this.#baseline = this.#smoothed;
    else if (this.#samples % BASELINE_WINDOW === 0)
      this.#baseline = Math.min(this.#smoothed, this.#baseline * BASELINE_DRIFT);
    // Decide once the turns started under the last limit have had time to show its effect.
    this.#sinceChange += 1;
    if (this.#sinceChange < Math.max(SMOOTHING_SAMPLES, this.#limit / 2)) return;
    const slowdown = this.#smoothed / Math.max(this.#baseline, 1e-3);
    if (slowdown > SLOWED) {
      this.#limit = Math.max(this.options.min, Math.floor(this.#limit * 0.8));
      this.#sinceChange = 0;
    } else if (slowdown < UNHURT && running >= this.#limit * 0.75) {
      this.#limit = Math.min(this.options.max, this.#limit + Math.max(1, Math.round(Math.sqrt(this.#limit))));
      this.#sinceChange = 0;
    }
  }
}

/** A limit that does not move (`maxRunning` set by hand). */
export class FixedLimit {
  constructor(readonly value: number) {}
  sample(): void {}
}
