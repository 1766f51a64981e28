/**
 * Every timer the sandbox arms goes through a {@link TimerSet}, so `dispose()` can prove that
 * nothing is left behind.
 * @module
 */

/** A set of timeouts and sleeps that can all be cancelled at once. */
export class TimerSet {
  #timers = new Map<ReturnType<typeof setTimeout>, () => void>();
  #closed = false;

  /** Runs `fn` after `ms` unless cleared. Returns a function that clears it. */
  set(fn: () => void, ms: number): () => void {
    if (this.#closed) return () => {};
    const id = setTimeout(() => {
      this.#timers.delete(id);
      fn();
    }, Math.max(0, ms));
    this.#timers.set(id, () => {});
    return () => {
      if (this.#timers.delete(id)) clearTimeout(id);
    };
  }

  /**
   * Resolves after `ms` (true), or early with false when the set is cleared or `signal` aborts.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.#closed || signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onAbort = () => {
        if (this.#timers.delete(id)) clearTimeout(id);
        resolve(false);
      };
      const id = setTimeout(() => {
        this.#timers.delete(id);
        signal?.removeEventListener("abort", onAbort);
        resolve(true);
      }, Math.max(0, ms));
      this.#timers.set(id, () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(false);
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Timers currently armed. */
  get size(): number {
    return this.#timers.size;
  }

  /** Clears every timer and resolves every pending sleep with false; later calls are no-ops. */
  close(): void {
    this.#closed = true;
    for (const [id, onClear] of this.#timers) {
      clearTimeout(id);
      onClear();
    }
    this.#timers.clear();
  }
}
