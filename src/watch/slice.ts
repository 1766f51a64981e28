/**
 * Time slices for a loop that drains a backlog on microtasks. A `for await` over events that are
 * already buffered never gives the event loop a turn: on Node every socket stays corked and every
 * timer waits until the whole backlog is done, so the first event of a burst leaves with the last.
 * A {@link TimeSlice} lets such a loop run for `budgetMs`, then yields one macrotask so writes,
 * reads and timers run, and goes on.
 *
 * @example
 * ```ts
 * import { TimeSlice } from "./slice.ts";
 * const slice = new TimeSlice(4);
 * for (const item of [1, 2, 3]) {
 *   // ... handle item ...
 *   await slice.spent(); // resolves at once unless the slice is spent
 * }
 * ```
 * @module
 */
import { type Clock, realClock } from "./clock.ts";

/** Runs `fn` as a macrotask: after pending I/O and timers had their turn. */
export type Macrotask = (fn: () => void) => void;

const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;

/**
 * The runtime's cheapest macrotask: `setImmediate` where there is one (Node, Bun: runs after the
 * poll phase, no clamping), else a zero timeout (Deno).
 */
export const macrotask: Macrotask = immediate ? (fn) => void immediate(fn) : (fn) => void setTimeout(fn, 0);

const done: Promise<void> = Promise.resolve();

/** A budget of synchronous-looking work between two turns of the event loop. */
export class TimeSlice {
  readonly #budgetMs: number;
  readonly #clock: Clock;
  readonly #macrotask: Macrotask;
  /** When the current slice began; `undefined` once the event loop had a turn. */
  #start: number | undefined;
  #yields = 0;

  /**
   * @param budgetMs how long a slice may run before it yields (0: yield after every item)
   * @param clock where the time comes from (tests: a `VirtualClock`)
   * @param schedule how a turn of the event loop is awaited (tests: a queue they run by hand)
   */
  constructor(budgetMs: number, clock: Clock = realClock, schedule: Macrotask = macrotask) {
    if (!(budgetMs >= 0)) throw new RangeError(`TimeSlice budget must be >= 0 ms, got ${budgetMs}`);
    this.#budgetMs = budgetMs;
    this.#clock = clock;
    this.#macrotask = schedule;
  }

  /** How often the loop has yielded because its slice was spent. */
  get yields(): number {
    return this.#yields;
  }

  /**
   * Call after each item. Resolves at once while the slice lasts; once it is spent, resolves after
   * one macrotask. A slice ends by itself whenever the event loop gets a turn anyway (the loop
   * waited for input), so only a backlog drained without a break pays for a yield.
   */
  spent(): Promise<void> {
    const now = this.#clock.now();
    if (this.#start === undefined) {
      this.#start = now;
      this.#macrotask(() => this.#start = undefined);
    }
    if (now - this.#start < this.#budgetMs) return done;
    this.#yields++;
    return new Promise((resolve) =>
      this.#macrotask(() => {
        this.#start = undefined;
        resolve();
      })
    );
  }
}
