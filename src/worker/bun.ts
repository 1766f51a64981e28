/**
 * Bun's default export over the one composition (`service/compose.ts`): `{ fetch, websocket,
 * idleTimeout, … }`, which Bun serves itself.
 *
 *     bun run src/worker/bun.ts
 *
 * Settings from `APPWATCH_*` (and the file `APPWATCH_CONFIG` names). The address: `APPWATCH_PORT`
 * / `APPWATCH_HOST` when set, else Bun's own default (`$PORT` or `$BUN_PORT`, else 3000). The
 * serve options are the Bun adapter's, the same as `bun run start`'s: its WebSocket handlers carry
 * the drain callback backpressure waits on, and streaming responses (SSE, Connect streams) are
 * exempt from Bun's HTTP idle timeout (10 s by default, and it counts only what the peer sends).
 * SIGTERM/SIGINT stop gracefully (1001, streams ended, the watch stopped), then exit 0.
 * See docs/edge.md.
 * @module
 */
import process from "node:process";
import { createAdapter } from "../service/adapters/bun.ts";
import { startWorker } from "./start.ts";

const worker = await startWorker({
  entry: "bun",
  env: process.env,
  adapter: createAdapter,
  stderr: (line) => console.error(line),
  exit: (code) => process.exit(code),
});
// Bun.serve listens on 0.0.0.0 unless told otherwise (APPWATCH_HOST).
worker.checkExposure(worker.address.hostname ?? "0.0.0.0");
process.on("SIGTERM", worker.onSignal);
process.on("SIGINT", worker.onSignal);

/** What `Bun.serve` takes; Bun prints `Started server: <url>` once it listens. */
export default {
  ...worker.runtime.serveOptions(worker.composition.fetch),
  ...worker.address,
  // Production error handling: no development error pages with stack traces.
  development: false,
};
