/**
 * Serve a web-standard `fetch` handler (the sandbox, test servers) on Deno, Bun or Node — through
 * the same runtime adapters as the service (`src/service/adapters/`), so there is one HTTP server
 * stack.
 * @module
 */
import { type FetchHandler, type ListeningServer, loadAdapter } from "./service/adapters/types.ts";

/** A running HTTP server, and whether its runtime holds response headers until the first body byte. */
export type RunningServer = ListeningServer & { readonly headersWaitForBody: boolean };

/** Options for {@link serveFetch}. */
export interface ServeOptions {
  /** Port; 0 picks a free one. */
  port?: number;
  /** Defaults to 127.0.0.1. */
  hostname?: string;
}

/** Starts an HTTP server for `handler` on the current runtime. */
export async function serveFetch(handler: FetchHandler, options: ServeOptions = {}): Promise<RunningServer> {
  const adapter = await loadAdapter();
  const server = await adapter.listen((req) => handler(req), { port: options.port ?? 0, hostname: options.hostname ?? "127.0.0.1" });
  return Object.assign(server, { headersWaitForBody: adapter.headersWaitForBody });
}
