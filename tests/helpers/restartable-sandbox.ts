/**
 * A sandbox API server whose HTTP listener can be taken down and brought
 * back on the same port while the sandbox (objects, history) lives on — an
 * API server that is unreachable for a while — plus a kubeconfig for it, so
 * the service can be pointed at it like at a real cluster.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runtimeName } from "../../src/runtime.ts";
import { Sandbox } from "../../src/sandbox/sandbox.ts";
import type { SandboxOptions } from "../../src/sandbox/types.ts";
import { type RunningServer, serveFetch } from "../../src/serve.ts";

/** A sandbox served on a fixed loopback port that can stop and start serving. */
export interface RestartableSandbox {
  readonly sandbox: Sandbox;
  readonly url: string;
  readonly port: number;
  readonly serving: boolean;
  /** Stops listening and ends every open connection (clients get connection refused from now on). */
  stopServing(): Promise<void>;
  /** Listens again on the same port. */
  serveAgain(): Promise<void>;
  /** Disposes the sandbox and stops serving. */
  close(): Promise<void>;
}

/** A port that was free a moment ago (for a server started later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Starts the sandbox; with `serve: false` it is not listening yet (call `serveAgain`). */
export async function startRestartableSandbox(options: SandboxOptions & { serve?: boolean } = {}): Promise<RestartableSandbox> {
  const { serve = true, ...rest } = options;
  const sandbox = new Sandbox({ ...rest, leadingNewline: rest.leadingNewline ?? runtimeName() === "bun" });
  const handler = (req: Request) => sandbox.app.fetch(req);
  const port = await freePort();
  let server: RunningServer | undefined = serve ? await serveFetch(handler, { port }) : undefined;
  return {
    sandbox,
    url: `http://127.0.0.1:${port}`,
    port,
    get serving() {
      return server !== undefined;
    },
    async stopServing() {
      const s = server;
      server = undefined;
      if (!s) return;
      const closing = s.close(); // stops accepting at once
      sandbox.closeWatches(); // lets open watch responses finish, so the close completes
      await closing;
    },
    async serveAgain() {
      if (server) return;
      server = await serveFetch(handler, { port });
    },
    async close() {
      sandbox.dispose();
      const s = server;
      server = undefined;
      await s?.close();
    },
  };
}

/** Writes a kubeconfig for `url` (no credentials) in a temp dir; `cleanup` removes it. */
export async function writeKubeconfig(url: string, namespace = "flyte"): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "appwatch-svc-kc-"));
  const path = join(dir, "config");
  await writeFile(
    path,
    `apiVersion: v1
kind: Config
clusters: [{name: sb, cluster: {server: "${url}"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: sb, user: u, namespace: ${namespace}}}]
current-context: c
`,
  );
  return { path, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
