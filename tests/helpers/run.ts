/** Helpers to drive a reflector in tests. */
import type { Reflector } from "../../src/watch/reflector.ts";
import type { KubeObject, ReflectorEvent } from "../../src/watch/types.ts";

export interface Running<T extends KubeObject> {
  events: ReflectorEvent<T>[];
  /** Resolves when the run loop has ended (after stop()). */
  done: Promise<void>;
  error: () => unknown;
  stop(): Promise<void>;
  /** Polls until `pred` holds (fails the test after timeoutMs with `what`). */
  waitFor(pred: () => boolean, what: string, timeoutMs?: number): Promise<void>;
}

export function start<T extends KubeObject>(reflector: Reflector<T>, onEvent?: (e: ReflectorEvent<T>) => void | Promise<void>): Running<T> {
  const ac = new AbortController();
  const events: ReflectorEvent<T>[] = [];
  let error: unknown;
  const done = (async () => {
    try {
      for await (const e of reflector.run(ac.signal)) {
        events.push(e);
        await onEvent?.(e);
      }
    } catch (err) {
      error = err;
    }
  })();
  return {
    events,
    done,
    error: () => error,
    stop: async () => {
      ac.abort();
      await done;
    },
    waitFor: (pred, what, timeoutMs = 10_000) => waitFor(pred, what, timeoutMs),
  };
}

export async function waitFor(pred: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Event summary strings like "added flyte/a@5" for readable assertions. */
export function summary(events: ReflectorEvent[]): string[] {
  return events.map((e) => {
    if (e.type === "synced") return `synced ${e.phase}@${e.resourceVersion}${e.cause ? ` (${e.cause})` : ""}`;
    const m = e.object.metadata;
    return `${e.type}${e.type === "deleted" && e.inferred ? "(inferred)" : ""} ${m.namespace}/${m.name}@${m.resourceVersion}`;
  });
}
