/**
 * gRPC proper (HTTP/2 cleartext, "h2c") for Flyte's AppService, on a port of its own
 * (`--grpc-port`). gRPC needs HTTP/2 and response trailers, which the fetch `Response` behind the
 * Hono routes cannot carry, so this listener is `node:http2` with `@connectrpc/connect-node`'s
 * adapter; it serves Connect and gRPC-Web too. Tested on Node, Deno and Bun (their `node:http2`).
 * @module
 */
import { createServer, type Http2Session } from "node:http2";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { AppServiceHandlers } from "../connect.ts";
import { type ListeningServer, urlHost } from "./types.ts";

/** Serves `service` over gRPC, gRPC-Web and Connect on HTTP/2 cleartext, at `/` and `/internal/`. */
export function listenGrpc(service: AppServiceHandlers, options: { port: number; hostname: string }): Promise<ListeningServer> {
  const common = {
    routes: (router: Parameters<AppServiceHandlers["routes"]>[0]) => service.routes(router),
    contextValues: (req: { socket?: { remoteAddress?: string } }) => service.contextValues(req.socket?.remoteAddress ?? "unknown"),
  };
  // Flyte's data plane path (`/internal/…`) and the plain service path, as on the HTTP port.
  const internal = connectNodeAdapter({ ...common, requestPathPrefix: "/internal" });
  const handler = connectNodeAdapter({ ...common, fallback: internal });
  const server = createServer(handler);
  const sessions = new Set<Http2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : options.port;
      resolve({
        url: `http://${urlHost(options.hostname)}:${port}`,
        port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // Streams were ended with `unavailable` before this; let their last frames go, then cut.
            for (const session of sessions) session.close();
            setTimeout(() => {
              for (const session of sessions) session.destroy();
            }, 1000).unref?.();
          }),
      });
    });
  });
}
