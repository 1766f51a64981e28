/**
 * The sandbox store's committed writes ({@link StoreEvent}) and their bounded history
 * ({@link EventLog}): the "watch cache" window a watch replays from.
 * @module
 */
import type { KubeObject, SandboxResource } from "./types.ts";

export type EventType = "ADDED" | "MODIFIED" | "DELETED";

/** One committed write. */
export interface StoreEvent {
  readonly type: EventType;
  readonly resource: SandboxResource;
  readonly rv: number;
  /** `namespace/name`. */
  readonly key: string;
  /** The new state; for DELETED the last state stamped with the delete RV (as etcd3 returns it). */
  readonly object: KubeObject;
  /** The state before the write; undefined for ADDED. */
  readonly prev: KubeObject | undefined;
}

/** Append-only log with a bounded window; `compactedRV` is the newest RV no longer replayable past. */
export class EventLog {
  #events: StoreEvent[] = [];
  #head = 0;
  /** Events with rv > compactedRV are all retained. */
  compactedRV: number;

  constructor(rv: number) {
    this.compactedRV = rv;
  }

  get length(): number {
    return this.#events.length - this.#head;
  }

  push(ev: StoreEvent, limit: number): void {
    this.#events.push(ev);
    while (this.length > limit) {
      const dropped = this.#events[this.#head]!;
      this.#events[this.#head] = undefined as unknown as StoreEvent;
      this.#head++;
      this.compactedRV = dropped.rv;
    }
    // Amortised O(1): only copy when the dead prefix dominates.
    if (this.#head > 1024 && this.#head * 2 > this.#events.length) {
      this.#events = this.#events.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Events with rv > `rv`, oldest first. */
  since(rv: number): StoreEvent[] {
    let lo = this.#head;
    let hi = this.#events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#events[mid]!.rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    return this.#events.slice(lo);
  }

  /** Drops everything; history now starts at `rv`. */
  clear(rv: number): void {
    this.#events = [];
    this.#head = 0;
    this.compactedRV = rv;
  }
}
