/**
 * Replays a reflector's event stream from empty with strict rules, so a test
 * can prove the stream lost nothing, invented nothing and duplicated nothing.
 */
import type { KubeObject, ReflectorEvent } from "../../src/watch/types.ts";
import { objectKey } from "../../src/watch/types.ts";

/** Applies events to an empty map; throws on the first event that does not fit. */
export function strictReplay(events: ReflectorEvent[]): Map<string, KubeObject> {
  const state = new Map<string, KubeObject>();
  events.forEach((e, i) => {
    if (e.type === "synced") return;
    const key = objectKey(e.object);
    const where = `event #${i} ${e.type} ${key}@${e.object.metadata.resourceVersion}`;
    const cur = state.get(key);
    switch (e.type) {
      case "added":
        if (cur) throw new Error(`${where}: duplicate add (already have @${cur.metadata.resourceVersion})`);
        state.set(key, e.object);
        break;
      case "modified":
        if (!cur) throw new Error(`${where}: modify of an unknown object`);
        if (cur !== e.previous) throw new Error(`${where}: previous is not the last state delivered`);
        if (cur.metadata.resourceVersion === e.object.metadata.resourceVersion) throw new Error(`${where}: no-op modify`);
        state.set(key, e.object);
        break;
      case "deleted":
        if (!cur) throw new Error(`${where}: delete of an unknown object`);
        state.delete(key);
        break;
    }
  });
  return state;
}

/** `key@resourceVersion` lines, sorted: a compact, comparable picture of a state. */
export function fingerprint(objects: Iterable<KubeObject>): string[] {
  return [...objects].map((o) => `${objectKey(o)}@${o.metadata.resourceVersion}`).sort();
}
