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
