/**
 * The `deno serve` entry: `export default { fetch }` over the one composition (`service/compose.ts`).
 *
 *     deno serve -A --port 8080 src/worker/deno.ts
 *
 * Settings from `APPWATCH_*` (and the file `APPWATCH_CONFIG` names); the address from
 * `deno serve --port/--host`, which own the listener. SIGTERM/SIGINT stop gracefully
 * (WebSockets closed with 1001, SSE and Connect streams ended, the watch stopped) within
 * `APPWATCH_SHUTDOWN_TIMEOUT`, then the process exits 0: `deno serve` alone would exit at once
 * without a close frame, or, with a listener installed, never. See docs/edge.md.
 * @module
 */
import { createAdapter } from "../service/adapters/deno.ts";
import { urlHost } from "../service/adapters/types.ts";
import { startWorker } from "./start.ts";

// deno-lint-ignore no-explicit-any
const Deno = (globalThis as any).Deno;

const worker = await startWorker({
  entry: "deno serve",
  env: Deno.env.toObject(),
  adapter: createAdapter,
  stderr: (line) => console.error(line),
  exit: (code): never => Deno.exit(code) as never,
});
if (worker.address.port !== undefined || worker.address.hostname !== undefined) {
  worker.logger.warn("APPWATCH_PORT/APPWATCH_HOST are not used here: deno serve listens where --port/--host say", worker.address);
}
for (const signal of ["SIGTERM", "SIGINT"]) {
  try {
    Deno.addSignalListener(signal, worker.onSignal);
  } catch {
    // Not every platform has every signal (Windows: no SIGTERM); the default then applies.
  }
}

/** Deno's `ServeDefaultExport`: the handler gets `(request, info)`; `info` reaches Hono as `env`. */
export default {
  fetch: worker.composition.fetch,
  onListen(addr: { hostname: string; port: number }) {
    worker.listening(`http://${urlHost(addr.hostname)}:${addr.port}`, addr.hostname);
  },
};
