/**
 * Which JavaScript runtime we run on: the one detector. Runtime-specific code lives only in thin
 * adapters (`src/service/adapters/`, `src/kube/transport.ts`); everything else uses web standards.
 * @module
 */

/** The three runtimes appwatch supports. */
export type RuntimeName = "deno" | "bun" | "node";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** Detects the current runtime from its global object (by version strings, not mere presence: shims exist). */
export function runtimeName(): RuntimeName {
  if (typeof g.Deno?.version?.deno === "string") return "deno";
  if (typeof g.Bun?.version === "string") return "bun";
  return "node";
}

/** The runtime's own version, e.g. `2.9.6` (Deno), `1.4.4` (Bun), `20.19.0` (Node). */
export function runtimeVersion(): string {
  return g.Deno?.version?.deno ?? g.Bun?.version ?? g.process?.versions?.node ?? "";
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
    const unref = g.Deno?.unrefTimer as ((id: unknown) => void) | undefined;
    if (typeof unref === "function") unref(timer);
  }
  return timer;
}
