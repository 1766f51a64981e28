/**
 * The command that runs a TypeScript file on the runtime running the suite (a child process of
 * the same kind: Deno `run -A`, Bun as is, Node through tsx).
 * @module
 */
import process from "node:process";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** `[command, argv]` for `spawn`, running `file` with `args` on this runtime. */
export function runtimeCommand(file: string, args: string[] = []): [string, string[]] {
  if (g.Deno) return [g.Deno.execPath(), ["run", "-A", file, ...args]];
  if (g.Bun) return [process.execPath, [file, ...args]];
  return [process.execPath, ["--import", "tsx", file, ...args]];
}
