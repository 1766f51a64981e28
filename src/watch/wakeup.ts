/**
 * One sleeper and whoever wakes it: the wake-up half of a pull queue (the merge in `mux.ts`, a
 * `Subscription`, Connect's Watch), so each queue is its own array plus this.
 * @module
 */

/**
 * `wait()` gives a promise the next `wake()` settles; a `wake()` with nobody waiting does nothing.
 * A sleeper checks its condition, then waits, with no await in between, so no wake-up is lost.
 *
 * @example
 * ```ts
 * import { Wakeup } from "./wakeup.ts";
 * const items: number[] = [];
 * const wakeup = new Wakeup();
 * setTimeout(() => { items.push(1); wakeup.wake(); }, 0);
 * while (items.length === 0) await wakeup.wait();
 * ```
 */
export class Wakeup {
  #resolve: (() => void) | undefined;

  /** Settles at the next {@link wake}. One sleeper at a time: a second `wait()` replaces the first. */
  wait(): Promise<void> {
    return new Promise<void>((resolve) => (this.#resolve = resolve));
  }

  /** Wakes the sleeper, if there is one. */
  wake(): void {
    const resolve = this.#resolve;
    this.#resolve = undefined;
    resolve?.();
  }
}
