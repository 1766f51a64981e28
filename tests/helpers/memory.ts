/**
 * A full garbage collection on demand (Bun.gc, or V8's gc exposed at run
 * time through node:v8 + node:vm on Node and Deno), so memory assertions
 * measure what is retained rather than garbage not yet collected.
 */
import process from "node:process";
import v8 from "node:v8";
import vm from "node:vm";

let gcFn: (() => void) | undefined;

function resolveGc(): () => void {
  // deno-lint-ignore no-explicit-any
  const bun = (globalThis as any).Bun;
  if (bun?.gc) return () => bun.gc(true);
  // deno-lint-ignore no-explicit-any
  const exposed = (globalThis as any).gc;
  if (typeof exposed === "function") return () => exposed();
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as () => void;
  return () => gc();
}

/** Runs a full garbage collection. */
export function forceGc(): void {
  gcFn ??= resolveGc();
  gcFn();
}

/** Process resident set size in bytes after a full collection. */
export function rssAfterGc(): number {
  forceGc();
  return process.memoryUsage().rss;
}

/**
 * Resident set size after a full collection, less the heap the engine keeps committed but empty
 * (`heapTotal - heapUsed`). After a burst, Node 24's V8 keeps ~100 MiB of emptied heap pages
 * resident (heapUsed +13 MiB, heapTotal +110 MiB on the 50,000-change test, where Node 22's
 * heapTotal grows 14 MiB): RSS counts them, though nothing lives there. What is retained, objects
 * on the heap and buffers off it, still counts.
 */
export function residentAfterGc(): number {
  forceGc();
  const { rss, heapTotal, heapUsed } = process.memoryUsage();
  return rss - (heapTotal - heapUsed);
}
