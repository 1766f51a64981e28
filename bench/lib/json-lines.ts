/**
 * The benchmarks' control channel to a child process: one JSON command per stdin line, one JSON
 * answer per stdout line, answers taken in order. Shared by the B3 driver (`fanout/fanout.ts`), its bare
 * servers (`fanout/bare-driver.ts`) and B6 (`latency/latency.ts`); each caller keeps its own exit policy.
 * @module
 */
import type { ChildProcess } from "node:child_process";
import process from "node:process";
import { createInterface } from "node:readline";

/** The next answer, and a command followed by its answer. */
export interface JsonLines {
  next(): Promise<Record<string, unknown>>;
  send(cmd: unknown): Promise<Record<string, unknown>>;
}

/**
 * Reads `proc`'s stdout as JSON lines (it must be spawned with stdin and stdout piped). A line that
 * is not a JSON object (V8's `--trace-gc` writes to stdout) goes to this process's stderr.
 */
export function jsonLines(proc: ChildProcess): JsonLines {
  const queue: string[] = [];
  const waiters: ((l: string) => void)[] = [];
  createInterface({ input: proc.stdout! }).on("line", (l) => {
    if (!l.startsWith("{")) return void process.stderr.write(l + "\n");
    const w = waiters.shift();
    if (w) w(l);
    else queue.push(l);
  });
  const next = () =>
    new Promise<Record<string, unknown>>((resolve) => {
      const l = queue.shift();
      if (l !== undefined) resolve(JSON.parse(l));
      else waiters.push((x) => resolve(JSON.parse(x)));
    });
  return {
    next,
    send(cmd) {
      proc.stdin!.write(JSON.stringify(cmd) + "\n");
      return next();
    },
  };
}
