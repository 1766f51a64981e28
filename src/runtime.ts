/**
 * Which JavaScript runtime we run on. Runtime-specific code lives only in thin
 * adapters (`src/kube/transport.ts`, `src/serve.ts`); everything else uses web standards.
 * @module
 */

/** The three runtimes appwatch supports. */
export type RuntimeName = "deno" | "bun" | "node";

/** Detects the current runtime from its global object. */
export function runtimeName(): RuntimeName {
  const g = globalThis as Record<string, unknown>;
  if (g.Deno !== undefined) return "deno";
  if (g.Bun !== undefined) return "bun";
  return "node";
}

/**
 * Lets the process exit while `timer` is pending (Node and Bun: `Timeout#unref()`; Deno: numeric
 * ids and `Deno.unrefTimer`). Returns `timer`.
 */
export function unrefTimer<T>(timer: T): T {
  const t = timer as unknown as { unref?: () => void } | null;
  if (typeof t === "object" && t !== null && typeof t.unref === "function") {
    t.unref();
  } else {
    const unref = (globalThis as { Deno?: { unrefTimer?: (id: unknown) => void } }).Deno?.unrefTimer;
    if (typeof unref === "function") unref(timer);
  }
  return timer;
}
