/**
 * Whether a port can be listened on, asked before anything starts (issue 24): `appwatch serve`
 * on a busy port says so in one plain line instead of a log line after the sandbox is up.
 * `node:net` is there on Node, Deno and Bun alike, and gives every runtime's bind error a Node code.
 * @module
 */
import { createServer } from "node:net";

/** Why a port cannot be listened on: `in-use` (EADDRINUSE), `denied` (EACCES, e.g. below 1024), or another bind error. */
export type PortProblem = { kind: "in-use" | "denied" | "other"; message: string };

/** The problem of listening on `hostname:port`, or undefined when it can (port 0 always can). Listens for an instant, then closes. */
export function probePort(port: number, hostname: string): Promise<PortProblem | undefined> {
  if (port === 0) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", (err: NodeJS.ErrnoException) => resolve(listenProblem(err)));
    server.listen({ port, host: hostname, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/** A bind error (of the probe, or of the real listener that lost a race) as a {@link PortProblem}; undefined when it is none. */
export function listenProblem(err: unknown): PortProblem | undefined {
  const e = err as { code?: unknown; name?: unknown; message?: unknown } | null;
  const code = typeof e?.code === "string" ? e.code : typeof e?.name === "string" ? e.name : "";
  const message = typeof e?.message === "string" ? e.message : String(err);
  if (code === "EADDRINUSE" || code === "AddrInUse") return { kind: "in-use", message };
  if (code === "EACCES" || code === "PermissionDenied") return { kind: "denied", message };
  if (code === "EADDRNOTAVAIL" || code === "AddrNotAvailable" || code === "ENOTFOUND" || code === "EAI_AGAIN") return { kind: "other", message };
  return undefined;
}
