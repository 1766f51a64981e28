/**
 * Merging async sources into one stream, after Deno std's MuxAsyncIterator:
 * each source has at most one pending `next()`, whose result goes into one
 * queue, and the merge sleeps on a single wake-up promise. `Promise.race`
 * over long-pending promises is what this replaces: every race adds a
 * reaction to each still-pending promise, so one quiet source made memory
 * grow with every event of the busy ones.
 * @module
 */
import { Wakeup } from "./wakeup.ts";

/** Starts one source; it must stop soon after `signal` aborts. */
export type MuxSource<T> = (signal: AbortSignal) => AsyncIterator<T, unknown, undefined>;

/** One merged item: which source (its index) and what it yielded. */
export interface MuxItem<T> {
  index: number;
  value: T;
}

/**
 * Yields the items of every source as they come, each source's in its own
 * order. A source is asked for its next item only after the consumer took
 * the previous one (pull-based, like the sources themselves). Ends when every
 * source has ended or `signal` aborts; throws the first error of a source.
 * On every exit the merge aborts its own signal (the one the sources got)
 * before awaiting their `return()`, so leaving the loop never waits for a
 * source stuck in a quiet watch.
 */
export async function* mux<T>(sources: readonly MuxSource<T>[], signal?: AbortSignal): AsyncGenerator<MuxItem<T>, void, undefined> {
  const ac = new AbortController();
  const onAbort = () => ac.abort(signal?.reason);
  if (signal?.aborted) ac.abort(signal.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  const iterators: AsyncIterator<T, unknown, undefined>[] = [];
  // At most one item per source: a source is pumped again only once its item was taken.
  const ready: MuxItem<T>[] = [];
  let failure: { error: unknown } | undefined;
  let live = 0;
  const wakeup = new Wakeup();
  const notify = () => wakeup.wake();
  const pump = (index: number) => {
    iterators[index]!.next().then(
      (r) => {
        if (r.done) live--;
        else ready.push({ index, value: r.value });
        notify();
      },
      (error: unknown) => {
        live--;
        failure ??= { error };
        notify();
      },
    );
  };
  ac.signal.addEventListener("abort", notify, { once: true });
  try {
    for (const start of sources) {
      iterators.push(start(ac.signal));
      live++;
    }
    for (let i = 0; i < iterators.length; i++) pump(i);
    for (;;) {
      while (ready.length > 0 && failure === undefined && !ac.signal.aborted) {
        const item = ready.shift()!;
        yield item;
        pump(item.index);
      }
      if (failure) throw failure.error;
      if (live === 0 || ac.signal.aborted) return;
      await wakeup.wait();
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    ac.signal.removeEventListener("abort", notify);
    ac.abort();
    // A source's return() waits for its pending next(); the abort above is what ends that.
    await Promise.all(iterators.map((it) => it.return?.().catch(() => {})));
  }
}
