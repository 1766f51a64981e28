/**
 * Every timer the sandbox arms goes through a {@link TimerSet}, so `dispose()` can prove that
 * nothing is left behind, and a test can run the sandbox's timing rules (watch timeouts,
 * bookmarks, continue-token expiry, the future-RV wait, warm-up, drips) on a virtual clock.
 * @module
 */

import { type Clock, realClock, type TimerHandle } from "../watch/clock.ts";

/** A set of timeouts and sleeps on one {@link Clock} that can all be cancelled at once. */
export class TimerSet {
  readonly #clock: Clock;
  #timers = new Map<TimerHandle, () => void>();
  // Flushes wait in real time whatever the clock: they give bytes already written time to leave
  // through the network stack, which a virtual clock does not move.
  #flushes = new Map<ReturnType<typeof setTimeout>, () => void>();
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
    const id = this.#clock.setTimeout(() => {
      this.#timers.delete(id);
      fn();
    }, Math.max(0, ms), purpose);
    this.#timers.set(id, () => {});
    return () => {
      if (this.#timers.delete(id)) this.#clock.clearTimeout(id);
    };
  }

  /**
   * Resolves after `ms` of the clock's time (true), or early with false when the set is cleared
   * or `signal` aborts.
   */
  sleep(ms: number, signal?: AbortSignal, purpose?: string): Promise<boolean> {
    if (this.#closed || signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onAbort = () => {
        if (this.#timers.delete(id)) this.#clock.clearTimeout(id);
        resolve(false);
      };
      const id = this.#clock.setTimeout(() => {
        this.#timers.delete(id);
        signal?.removeEventListener("abort", onAbort);
        resolve(true);
      }, Math.max(0, ms), purpose);
      this.#timers.set(id, () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(false);
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * Like {@link sleep}, but always in real time: for letting written bytes reach the peer before
   * a connection is cut (see {@link TimerSet}'s flushes note).
   */
  flush(ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.#closed || signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onAbort = () => {
        if (this.#flushes.delete(id)) clearTimeout(id);
        resolve(false);
      };
      const id = setTimeout(() => {
        this.#flushes.delete(id);
        signal?.removeEventListener("abort", onAbort);
        resolve(true);
      }, Math.max(0, ms));
      this.#flushes.set(id, () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(false);
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Timers currently armed (flushes included). */
  get size(): number {
    return this.#timers.size + this.#flushes.size;
  }

  /** Clears every timer and resolves every pending sleep with false; later calls are no-ops. */
  close(): void {
    this.#closed = true;
    for (const [id, onClear] of this.#timers) {
      this.#clock.clearTimeout(id);
      onClear();
    }
    this.#timers.clear();
    for (const [id, onClear] of this.#flushes) {
      clearTimeout(id);
      onClear();
    }
    this.#flushes.clear();
  }
}
