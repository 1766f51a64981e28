/**
 * Exponential backoff with jitter, client-go's reflector defaults: 0.8 s
 * doubling to a 30 s cap, jitter factor 1.0 (each delay uniform in [d, 2d)),
 * reset after 2 minutes without a failure.
 * @module
 */

/** Backoff parameters. */
export interface BackoffOptions {
  initialMs: number;
  factor: number;
  maxMs: number;
  /** Jitter factor: a delay d becomes d + random·jitter·d. */
  jitter: number;
  /** A failure more than this long after the previous one starts again from `initialMs`. */
  resetAfterMs: number;
}

/** client-go's reflector backoff. */
export const DEFAULT_BACKOFF: BackoffOptions = {
  initialMs: 800,
  factor: 2,
  maxMs: 30_000,
  jitter: 1,
  resetAfterMs: 120_000,
};

/** Stateful backoff: call {@link Backoff.next} after each failure. */
export class Backoff {
  readonly options: BackoffOptions;
  #current: number;
  #lastFailure = -Infinity;
  readonly #random: () => number;
  readonly #now: () => number;

  constructor(options: Partial<BackoffOptions> = {}, random: () => number = Math.random, now: () => number = Date.now) {
    this.options = { ...DEFAULT_BACKOFF, ...options };
    this.#current = this.options.initialMs;
    this.#random = random;
    this.#now = now;
  }

  /** The delay to wait after a failure (grows with consecutive failures). */
  next(): number {
    const now = this.#now();
    if (now - this.#lastFailure > this.options.resetAfterMs) this.#current = this.options.initialMs;
    this.#lastFailure = now;
    const base = Math.min(this.#current, this.options.maxMs);
    this.#current = Math.min(this.#current * this.options.factor, this.options.maxMs);
    return base + this.#random() * this.options.jitter * base;
  }

  /** Forget past failures. */
  reset(): void {
    this.#current = this.options.initialMs;
    this.#lastFailure = -Infinity;
  }
}

/** Resolves after `ms`, or at once (without rejecting) when `signal` aborts; always clears its timer. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener("abort", done, { once: true });
  });
}
