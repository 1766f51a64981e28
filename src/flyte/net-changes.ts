/**
 * The per-app net pending change a coalescing subscription keeps instead of a FIFO
 * ({@link Subscription}'s `coalesce` policy): memory is bounded by the number of apps, not the
 * number of events, and the consumer still converges to every app's final state.
 * @module
 */
import { type App, appOf, watchEventKind } from "./model.ts";
import type { AppChange } from "./journal.ts";

/** Net pending change of one app. */
interface Net {
  /** Final state: the app, or undefined when it ends deleted. */
  app: App | undefined;
  /** The last app seen (for a delete event's payload). */
  last: App;
  /** A delete happened in the pending sequence. */
  deleted: boolean;
}

/**
 * Pending changes collapsed per app, in order of each app's latest change.
 *
 * @example
 * ```ts
 * import { NetChanges } from "./net-changes.ts";
 * const app = { metadata: { id: { name: "web" } } };
 * const net = new NetChanges();
 * net.merge({ key: "a", event: { createEvent: { app } } });
 * net.merge({ key: "a", event: { deleteEvent: { app } } }); // true: coalesced
 * net.next(new Set()); // undefined: the consumer never saw "a", so nothing to tell
 * ```
 */
export class NetChanges {
  readonly #net = new Map<string, Net>();

  /** Apps with a pending change. */
  get size(): number {
    return this.#net.size;
  }

  /** Adds one change; true when it collapsed into a pending change of the same app. */
  merge(change: AppChange): boolean {
    const prev = this.#net.get(change.key);
    const app = appOf(change.event);
    const next: Net = prev ?? { app: undefined, last: app, deleted: false };
    if (watchEventKind(change.event) === "deleteEvent") {
      next.app = undefined;
      next.deleted = true;
    } else {
      next.app = app;
    }
    next.last = app;
    // Re-insert to keep per-app entries in order of their latest change.
    this.#net.delete(change.key);
    this.#net.set(change.key, next);
    return prev !== undefined;
  }

  /**
   * Removes the oldest app's entry and returns the one event that brings a consumer who knows
   * `known` to its net final state; apps that net to nothing for it are skipped. Undefined: none left.
   */
  next(known: ReadonlySet<string>): AppChange | undefined {
    for (const [key, net] of this.#net) {
      this.#net.delete(key);
      const seen = known.has(key);
      if (net.app === undefined) {
        if (seen) return { key, event: { deleteEvent: { app: net.last } } };
        continue;
      }
      if (!seen || net.deleted) return { key, event: { createEvent: { app: net.app } } };
      return { key, event: { updateEvent: { updatedApp: net.app } } };
    }
    return undefined;
  }
}
