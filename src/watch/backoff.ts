/**
 * Exponential backoff with jitter: 0.8 s doubling to an 8 s cap, each delay
 * drawn from [d/2, d] ("equal jitter"), reset after a healthy watch (the
 * reflector calls {@link Backoff.reset}) or 2 minutes without a failure.
 * client-go caps at 30 s with up to 100 % added on top, so a client could
 * stay stale for a minute after an outage ended; a cap that bounds the whole
 * delay keeps recovery within 8 s, and the random half keeps replicas apart.
 * @module
 */
import { type Clock, realClock } from "./clock.ts";

/** Backoff parameters. */
export interface BackoffOptions {
  initialMs: number;
  factor: number;
  /** The longest delay, jitter included. */
  maxMs: number;
  /**
   * Jitter factor in [0, 1]: a delay d is drawn from [d·(1 − jitter), d]. 0 = exact steps, 1 =
   * "full jitter". Subtracted, never added, so {@link BackoffOptions.maxMs} is a real bound.
   */
  jitter: number;
  /** A failure more than this long after the previous one starts again from `initialMs`. */
  resetAfterMs: number;
}

/** The reflector's default backoff. */
export const DEFAULT_BACKOFF: BackoffOptions = {
  initialMs: 800,
  factor: 2,
  maxMs: 8_000,
  // Half: never a tight loop against a flapping server, yet 100 replicas spread over half the step.
  jitter: 0.5,
  resetAfterMs: 120_000,
};

/** Stateful backoff: call {@link Backoff.next} after each failure. */
export class Backoff {
  readonly options: BackoffOptions;
  #current: number;
  #lastFailure = -Infinity;
  readonly #random: () => number;
  readonly #now: () => number;

  constructor(options: Partial<BackoffOptions> = {}, random: () => number = Math.random, now: () => number = () => realClock.now()) {
    this.options = { ...DEFAULT_BACKOFF, ...options };
    this.#current = this.options.initialMs;
    this.#random = random;
    this.#now = now;
  }

  /** The delay to wait after a failure (grows with consecutive failures, never above `maxMs`). */
  next(): number {
    const now = this.#now();
    if (now - this.#lastFailure > this.options.resetAfterMs) this.#current = this.options.initialMs;
    this.#lastFailure = now;
    const base = Math.min(this.#current, this.options.maxMs);
    this.#current = Math.min(this.#current * this.options.factor, this.options.maxMs);
    const jitter = Math.min(1, Math.max(0, this.options.jitter));
    return base - this.#random() * jitter * base;
  }

  /** Forget past failures. */
  reset(): void {
    this.#current = this.options.initialMs;
    this.#lastFailure = -Infinity;
  }
}

/**
 * Resolves after `ms` on `clock`, or at once (without rejecting) when `signal`
 * aborts; always clears its timer. `purpose` names the timer on virtual clocks.
 */
export function sleep(ms: number, signal?: AbortSignal, clock: Clock = realClock, purpose = "sleep"): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clock.clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = clock.setTimeout(done, Math.max(0, ms), purpose);
    signal?.addEventListener("abort", done, { once: true });
  });
}
