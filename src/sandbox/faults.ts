/**
 * Fault injection: rules matched per request, and source wrappers that break, stall, end,
 * corrupt or slow down a response body.
 * @module
 */
import { type Bytes, type ChunkSource, CutError, sourceOf, utf8 } from "./stream.ts";
import type { TimerSet } from "./timers.ts";
import type { FaultAction, FaultHandle, FaultInjector, FaultRule, FaultVerb, SandboxResource } from "./types.ts";

/**
 * Delay between the last chunk handed to the HTTP server and the cut. Erroring the body in
 * the same tick can drop data the server has read but not yet flushed (Node corks the first
 * write; Bun batches), so one short timer keeps "n events, then cut" exact on every runtime.
 */
export const CUT_FLUSH_MS = 15;

/** Default malformed line of a `garbage` fault. */
export const DEFAULT_GARBAGE_LINE = `{"type":"ADDED","object":{` + "\n";

interface ActiveRule {
  readonly rule: FaultRule;
  remaining: number;
  used: number;
  removed: boolean;
}

function validateAction(a: FaultAction): void {
  const count = (n: number | undefined, what: string) => {
    if (n !== undefined && (!Number.isInteger(n) || n < 0)) throw new TypeError(`fault ${what} must be a non-negative integer`);
  };
  switch (a.type) {
    case "status":
      if (!Number.isInteger(a.code) || a.code < 100 || a.code > 599) throw new TypeError("fault status code must be 100-599");
      return;
    case "drip":
      if (!Number.isInteger(a.chunkBytes) || a.chunkBytes < 1) throw new TypeError("fault drip chunkBytes must be ≥ 1");
      if (!(a.delayMs >= 0)) throw new TypeError("fault drip delayMs must be ≥ 0");
      return;
    case "cut":
    case "stall":
    case "close":
    case "garbage":
      count(a.afterEvents, "afterEvents");
      return;
    default:
      throw new TypeError(`unknown fault type ${(a as { type: string }).type}`);
  }
}

/** The sandbox's {@link FaultInjector}. */
export class Faults implements FaultInjector {
  #rules: ActiveRule[] = [];

  add(rule: FaultRule): FaultHandle {
    validateAction(rule.action);
    const times = rule.times ?? 1;
    if (!(times > 0)) throw new TypeError("fault times must be > 0");
    const active: ActiveRule = { rule, remaining: times, used: 0, removed: false };
    this.#rules.push(active);
    return {
      remove: () => {
        active.removed = true;
        this.#rules = this.#rules.filter((r) => r !== active);
      },
      get used() {
        return active.used;
      },
    };
  }

  clear(): void {
    for (const r of this.#rules) r.removed = true;
    this.#rules = [];
  }

  get pending(): number {
    return this.#rules.length;
  }

  /** The action for a request, consuming one use of the first matching rule. */
  take(verb: FaultVerb, resource: SandboxResource): FaultAction | undefined {
    const r = this.#rules.find((x) =>
      (x.rule.verb === undefined || x.rule.verb === verb) && (x.rule.resource === undefined || x.rule.resource === resource)
    );
    if (!r) return undefined;
    r.used++;
    r.remaining--;
    if (r.remaining <= 0) {
      r.removed = true;
      this.#rules = this.#rules.filter((x) => x !== r);
    }
    return r.rule.action;
  }
}

/** Passes `n` chunks through, then hands over to `after`. */
function afterN(inner: ChunkSource, n: number, after: () => Promise<Bytes | null>, onCancel: () => void): ChunkSource {
  let sent = 0;
  return {
    async next() {
      if (sent < n) {
        const c = await inner.next();
        if (c !== null) sent++;
        return c;
      }
      return await after();
    },
    cancel() {
      onCancel();
      inner.cancel();
    },
  };
}

/**
 * `cut`: n chunks, then an abrupt connection break. With `midLine`, the first half of the next
 * chunk goes out first if one is ready; a quiet watch is cut at once rather than left waiting.
 */
export function cutSource(inner: ChunkSource, afterEvents: number, midLine: boolean, timers: TimerSet): ChunkSource {
  const ac = new AbortController();
  let halfSent = false;
  return afterN(inner, afterEvents, async () => {
    if (midLine && !halfSent) {
      halfSent = true;
      const c = inner.tryNext ? inner.tryNext() : await inner.next();
      if (c && c.length > 1) return c.subarray(0, Math.floor(c.length / 2));
    }
    inner.cancel();
    await timers.flush(CUT_FLUSH_MS, ac.signal);
    throw new CutError("injected cut");
  }, () => ac.abort());
}

/** `stall`: n chunks, then silence with the connection open until cancelled. */
export function stallSource(inner: ChunkSource, afterEvents: number): ChunkSource {
  let release: (() => void) | undefined;
  let cancelled = false;
  return afterN(inner, afterEvents, async () => {
    inner.cancel();
    if (!cancelled) await new Promise<void>((r) => (release = r));
    return null;
  }, () => {
    cancelled = true;
    release?.();
  });
}

/** `close`: n chunks, then a clean end. */
export function closeSource(inner: ChunkSource, afterEvents: number): ChunkSource {
  return afterN(inner, afterEvents, () => {
    inner.cancel();
    return Promise.resolve(null);
  }, () => {});
}

/** `garbage`: n chunks, one malformed line, then normal streaming. */
export function garbageSource(inner: ChunkSource, afterEvents: number, line: string): ChunkSource {
  let emitted = false;
  let sent = 0;
  return {
    async next() {
      if (!emitted && sent >= afterEvents) {
        emitted = true;
        return utf8(line);
      }
      const c = await inner.next();
      if (c !== null) sent++;
      return c;
    },
    cancel: () => inner.cancel(),
  };
}

/**
 * `drip`: re-chunks the body into pieces of at most `chunkBytes`, one every `delayMs`. A piece
 * never spans two source chunks (watch lines), since the next line may not exist yet.
 */
export function dripSource(inner: ChunkSource, chunkBytes: number, delayMs: number, timers: TimerSet): ChunkSource {
  const ac = new AbortController();
  let buf: Bytes = new Uint8Array(0);
  return {
    async next() {
      if (buf.length === 0) {
        const c = await inner.next();
        if (c === null) return null;
        buf = c;
      }
      if (!(await timers.sleep(delayMs, ac.signal, "drip"))) return null;
      const out = buf.subarray(0, chunkBytes);
      buf = buf.subarray(chunkBytes);
      return out;
    },
    cancel() {
      ac.abort();
      inner.cancel();
    },
  };
}

/** Applies a body fault to a watch stream; `status` is handled before the request runs. */
export function applyWatchFault(source: ChunkSource, action: FaultAction, timers: TimerSet): ChunkSource {
  switch (action.type) {
    case "cut":
      return cutSource(source, action.afterEvents ?? 0, action.midLine === true, timers);
    case "stall":
      return stallSource(source, action.afterEvents ?? 0);
    case "close":
      return closeSource(source, action.afterEvents ?? 0);
    case "garbage":
      return garbageSource(source, action.afterEvents ?? 0, action.line ?? DEFAULT_GARBAGE_LINE);
    case "drip":
      return dripSource(source, action.chunkBytes, action.delayMs, timers);
    case "status":
      return source;
  }
}

/**
 * Applies a body fault to a one-piece (list, get, …) body; undefined when the fault does not
 * apply (close, garbage) and the body is sent normally.
 */
export function applyBodyFault(body: Bytes, action: FaultAction, timers: TimerSet): ChunkSource | undefined {
  switch (action.type) {
    case "cut":
      // Half of the body, then the break.
      return cutSource(sourceOf([body]), 0, true, timers);
    case "stall":
      return stallSource(sourceOf([]), 0);
    case "drip":
      return dripSource(sourceOf([body]), action.chunkBytes, action.delayMs, timers);
    default:
      return undefined;
  }
}
