/**
 * How a benchmark's server child process lives: an HTTP server on a free loopback port that
 * prints its meta line (JSON) on stdout once listening, and exits on SIGTERM/SIGINT or as soon as
 * its parent goes away (the parent holds our stdin, so even a parent killed hard takes us along).
 * Used by bench/decoder/server.ts (B1) and bench/sync/server.ts (B2).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import process from "node:process";

/** Serves `handle`; `meta(url)` is printed as one JSON line when listening. Returns `shutdown`. */
export function serveChild(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  meta: (url: string) => unknown,
): (code: number) => void {
  const server = createServer({ keepAliveTimeout: 60_000 }, handle);
  const shutdown = (code: number): void => {
    server.closeAllConnections();
    server.close();
    process.exit(code);
  };
  process.on("SIGTERM", () => shutdown(0));
  process.on("SIGINT", () => shutdown(0));
  process.stdin.on("end", () => shutdown(0));
  process.stdin.on("close", () => shutdown(0));
  process.stdin.resume();
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    process.stdout.write(JSON.stringify(meta(`http://127.0.0.1:${port}`)) + "\n");
  });
  return shutdown;
}
