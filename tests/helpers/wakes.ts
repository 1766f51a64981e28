/**
 * Conditions re-checked on a signal instead of polled: whatever sees a change (an event, a log
 * line, a child's output) calls {@link Wakes.wake}, and each pending {@link Wakes.until} checks its
 * condition again.
 * @module
 */

/** The pending waits of one source of changes. */
export class Wakes {
  readonly #checks = new Set<() => void>();
  readonly #details: () => string;
  #ended: string | undefined;

  /** `details` is appended to a failure's message (what the source had, for diagnosis). */
  constructor(details: () => string = () => "") {
    this.#details = details;
  }

  /** Something changed: every pending condition is checked again. */
  wake(): void {
    for (const check of this.#checks) check();
  }

  /** Nothing more can change (`reason`, e.g. "the CLI ended its output"): a condition that does not hold now fails. */
  end(reason: string): void {
    this.#ended = reason;
    this.wake();
  }

  /**
   * Resolves once `holds()`, checked now and on each {@link wake}. Fails after `timeoutMs` (a guard
   * against hangs, not a timing assertion), or at {@link end} if it does not hold then.
   */
  until(holds: () => boolean, what: string, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const settle = (err?: Error) => {
        this.#checks.delete(check);
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      const check = () => {
        if (holds()) settle();
        else if (this.#ended !== undefined) settle(new Error(`${this.#ended} before ${what}${this.#details()}`));
      };
      const timer = setTimeout(() => settle(new Error(`timed out waiting for ${what}${this.#details()}`)), timeoutMs);
      this.#checks.add(check);
      check();
    });
  }
}
