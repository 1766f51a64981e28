/**
 * The key paths a `JsonPruner` removes (`PrunePaths`, with the array wildcard
 * {@link EACH}), and their compiled form: a tree of levels the pruner walks (see prune.ts).
 * @module
 */

/**
 * Key paths to remove, e.g. `[["object", "metadata", "managedFields"], ["object", "spec"]]`
 * (a watch event) or `[["items", "*", "metadata", "managedFields"], ["items", "*", "spec"]]`
 * (a list page: {@link EACH} is every element of the array).
 */
export type PrunePaths = readonly (readonly string[])[];

/** The array wildcard of a {@link PrunePaths} path: every element of the array at that position. */
export const EACH = "*";

/**
 * The list-page form of watch-event paths: `["object", …rest]` becomes
 * `["items", "*", …rest]` (a watch event's `object` is a list's item). Paths
 * that do not start with `object` have no list counterpart and are dropped.
 */
export function listPathsOf(watchPaths: PrunePaths): PrunePaths {
  return watchPaths.filter((p) => p.length > 1 && p[0] === "object").map((p) => ["items", EACH, ...p.slice(1)]);
}


/**
 * One level of the compiled paths: what to do with a value at this position.
 * When it is an object: its keys (as UTF-8 bytes) and what to do with each
 * key's value; when it is an array: what to do with every element (`each`).
 */
export interface Level {
  names: string[];
  keys: Uint8Array[];
  /** `null`: remove the value; a Level: walk into it (when it is an object or an array). */
  next: (Level | null)[];
  /** For removed values: the path's number (0 … paths − 1), -1 below a wildcard (removed many times). */
  leaf: number[];
  /** Array elements ({@link EACH}): `undefined` none, `null` remove every element, a Level walk into each. */
  each: Level | null | undefined;
}

function newLevel(): Level {
  return { names: [], keys: [], next: [], leaf: [], each: undefined };
}

export function compile(paths: PrunePaths): Level {
  const encoder = new TextEncoder();
  const root = newLevel();
  for (const path of paths) {
    if (path.length === 0) throw new TypeError("prune: a path needs at least one key");
    let level = root;
    for (let d = 0; d < path.length; d++) {
      const name = path[d]!;
      if (typeof name !== "string") throw new TypeError(`prune: path keys must be strings, got ${JSON.stringify(path)}`);
      const last = d === path.length - 1;
      if (name === EACH) {
        if (last) {
          level.each = null; // removing every element wins over removing something inside them
          break;
        }
        if (level.each === null) break; // every element is removed already
        level = level.each ??= newLevel();
        continue;
      }
      let i = level.names.indexOf(name);
      if (i < 0) {
        i = level.names.length;
        level.names.push(name);
        level.keys.push(encoder.encode(name));
        level.next.push(last ? null : newLevel());
        level.leaf.push(-1);
      }
      if (last) {
        level.next[i] = null; // removing a value wins over removing something inside it
        break;
      }
      const next = level.next[i];
      if (next === null || next === undefined) break; // an ancestor is removed already
      level = next;
    }
  }
  return root;
}

/**
 * Numbers the removed values that occur once per document (paths made
 * redundant by a removed ancestor drop out; those below a wildcard keep -1);
 * returns how many, and whether any path goes through a wildcard.
 */
export function numberLeaves(level: Level, state = { count: 0, wildcard: false }, below = false): { count: number; wildcard: boolean } {
  if (level.each !== undefined) {
    state.wildcard = true;
    if (level.each !== null) numberLeaves(level.each, state, true);
  }
  for (let i = 0; i < level.next.length; i++) {
    const next = level.next[i];
    if (next === null) level.leaf[i] = below ? -1 : state.count++;
    else if (next !== undefined) numberLeaves(next, state, below);
  }
  return state;
}
