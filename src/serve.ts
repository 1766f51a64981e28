/**
 * Serve a web-standard `fetch` handler on loopback (or any host) on Deno, Bun
 * or Node. The only runtime-specific HTTP-server code in appwatch lives here.
 * @module
 */
import { runtimeName } from "./runtime.ts";

/** A running HTTP server. */
export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:43121`. */
  readonly url: string;
  readonly port: number;
  /** Stops listening and closes every open connection (streams included). */
  close(): Promise<void>;
}

/** Options for {@link serveFetch}. */
export interface ServeOptions {
  /** Port; 0 picks a free one. */
  port?: number;
  /** Defaults to 127.0.0.1. */
  hostname?: string;
}

type FetchHandler = (req: Request) => Response | Promise<Response>;

/** Starts an HTTP server for `handler` on the current runtime. */
export async function serveFetch(handler: FetchHandler, options: ServeOptions = {}): Promise<RunningServer> {
  const hostname = options.hostname ?? "127.0.0.1";
  const port = options.port ?? 0;
  const rt = runtimeName();
  const urlHost = hostname.includes(":") ? `[${hostname}]` : hostname;
  if (rt === "deno") {
    // deno-lint-ignore no-explicit-any
    const Deno = (globalThis as any).Deno;
    const ac = new AbortController();
    const server = Deno.serve({ port, hostname, signal: ac.signal, onListen: () => {} }, handler);
    const actual: number = server.addr.port;
    return {
      url: `http://${urlHost}:${actual}`,
      port: actual,
      close: async () => {
        ac.abort();
        await server.shutdown?.().catch(() => {});
        await server.finished;
      },
    };
  }
  if (rt === "bun") {
    // deno-lint-ignore no-explicit-any
    const Bun = (globalThis as any).Bun;
    const server = Bun.serve({ port, hostname, fetch: handler, idleTimeout: 0 });
    const actual: number = server.port;
    return {
      url: `http://${urlHost}:${actual}`,
      port: actual,
      close: async () => {
        await server.stop(true);
      },
    };
  }
  const { createAdaptorServer } = await import("@hono/node-server");
  const server = createAdaptorServer({ fetch: handler, hostname, port });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, () => resolve());
  });
  const address = server.address();
  const actual = typeof address === "object" && address ? address.port : port;
  return {
    url: `http://${urlHost}:${actual}`,
    port: actual,
    close: () =>
      new Promise<void>((resolve) => {
        // deno-lint-ignore no-explicit-any
        const s = server as any;
        s.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
