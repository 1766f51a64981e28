/**
 * The reflector's cache: the current objects keyed by `namespace/name`, the
 * resourceVersion they are current as of, and whether a complete snapshot
 * has been loaded. As kube-rs's `store()` gives a `(Store, Writer)` pair, an
 * {@link ObjectStore} is the writer (only its watcher writes) and its
 * {@link ObjectStore.reader} the read-only view others share: the app layer
 * reads KServices from the watcher's store instead of keeping copies.
 * @module
 */
import { type KubeObject, objectKey } from "./types.ts";

/** A consistent view of the store at one instant. */
export interface StoreSnapshot<T extends KubeObject> {
  /** Objects sorted by key. */
  items: T[];
  /** The resourceVersion the snapshot is current as of ("" before the first sync). */
  resourceVersion: string;
  /** True once a complete list has been loaded. */
  synced: boolean;
}

/** A read-only view of an {@link ObjectStore}. */
export interface StoreReader<T extends KubeObject = KubeObject> {
  /** The object stored under `namespace/name` (or `name`). */
  get(key: string): T | undefined;
  has(key: string): boolean;
  readonly size: number;
  readonly resourceVersion: string;
  readonly synced: boolean;
  /** A copy of the current state, sorted by key. */
  snapshot(): StoreSnapshot<T>;
}

/** Objects keyed by `namespace/name`. Only the reflector (or the namespace merge) writes to it. */
export class ObjectStore<T extends KubeObject = KubeObject> {
  readonly #items = new Map<string, T>();
  #resourceVersion = "";
  #synced = false;
  /** The read-only view to hand out (it cannot be cast back to a writer). */
  readonly reader: StoreReader<T> = (() => {
    const store = this;
    return Object.freeze({
      get: (key: string) => store.get(key),
      has: (key: string) => store.has(key),
      get size() {
        return store.size;
      },
      get resourceVersion() {
        return store.resourceVersion;
      },
      get synced() {
        return store.synced;
      },
      snapshot: () => store.snapshot(),
    });
  })();

  /** The object stored under `namespace/name` (or `name`). */
  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  /** The object with the same key as `obj`. */
  getFor(obj: KubeObject): T | undefined {
    return this.#items.get(objectKey(obj));
  }

  has(key: string): boolean {
    return this.#items.has(key);
  }

  get size(): number {
    return this.#items.size;
  }

  get resourceVersion(): string {
    return this.#resourceVersion;
  }

  get synced(): boolean {
    return this.#synced;
  }

  keys(): IterableIterator<string> {
    return this.#items.keys();
  }

  values(): IterableIterator<T> {
    return this.#items.values();
  }

  /** A copy of the current state; cheap enough to call per subscriber. */
  snapshot(): StoreSnapshot<T> {
    const keys = [...this.#items.keys()].sort();
    return {
      items: keys.map((k) => this.#items.get(k) as T),
      resourceVersion: this.#resourceVersion,
      synced: this.#synced,
    };
  }

  /** @internal Writes are the reflector's job. */
  set(obj: T): void {
    this.#items.set(objectKey(obj), obj);
  }

  /** @internal */
  delete(key: string): void {
    this.#items.delete(key);
  }

  /** @internal */
  setResourceVersion(rv: string): void {
    this.#resourceVersion = rv;
  }

  /** @internal */
  markSynced(synced: boolean): void {
    this.#synced = synced;
  }
}
