/**
 * Every timer the sandbox arms goes through a {@link TimerSet}, so `dispose()` can prove that
 * nothing is left behind, and a test can run the sandbox's timing rules (watch timeouts,
 * bookmarks, continue-token expiry, the future-RV wait, warm-up, drips) on a virtual clock.
 * @module
 */

import { type Clock, realClock } from "../watch/clock.ts";

/** A set of timeouts and sleeps on one {@link Clock} that can all be cancelled at once. */
export class TimerSet {
  readonly #clock: Clock;
  // Each armed timer under a token of its own: handles of the set's clock and of the real clock
  // (flushes) may be equal numbers.
  #timers = new Map<object, () => void>();
  #closed = false;

  constructor(clock: Clock = realClock) {
    this.#clock = clock;
  }

  /**
   * Runs `fn` after `ms` unless cleared. `purpose` names the timer for a virtual clock's
   * `pending`/`next`. Returns a function that clears it.
   */
  set(fn: () => void, ms: number, purpose?: string): () => void {
    if (this.#closed) return () => {};
    return this.#arm(this.#clock, ms, purpose, fn, () => {});
  }

  /**
   * Resolves after `ms` of the clock's time (true), or early with false when the set is cleared
   * or `signal` aborts.
   */
  sleep(ms: number, signal?: AbortSignal, purpose?: string): Promise<boolean> {
    return this.#wait(this.#clock, ms, signal, purpose);
  }

  /**
   * Like {@link sleep}, but always in real time whatever the clock: it gives bytes already
   * written time to leave through the network stack before a connection is cut, which a virtual
   * clock does not move.
   */
  flush(ms: number, signal?: AbortSignal): Promise<boolean> {
    return this.#wait(realClock, ms, signal, undefined);
  }

  /** Timers currently armed (flushes included). */
  get size(): number {
    return this.#timers.size;
  }

  /** Clears every timer and resolves every pending sleep with false; later calls are no-ops. */
  close(): void {
    this.#closed = true;
    const cleared = [...this.#timers.values()];
    this.#timers.clear();
    for (const onClear of cleared) onClear();
  }

  #wait(clock: Clock, ms: number, signal: AbortSignal | undefined, purpose: string | undefined): Promise<boolean> {
    if (this.#closed || signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onAbort = () => {
        clear();
        resolve(false);
      };
      const clear = this.#arm(clock, ms, purpose, () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(true);
      }, () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(false);
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Arms `fn` on `clock`; `onClose` runs if the set is closed first. Returns the clear function. */
  #arm(clock: Clock, ms: number, purpose: string | undefined, fn: () => void, onClose: () => void): () => void {
    const token = {};
    const handle = clock.setTimeout(() => {
      if (this.#timers.delete(token)) fn();
    }, Math.max(0, ms), purpose);
    this.#timers.set(token, () => {
      clock.clearTimeout(handle);
      onClose();
    });
    return () => {
      if (this.#timers.delete(token)) clock.clearTimeout(handle);
    };
  }
}
