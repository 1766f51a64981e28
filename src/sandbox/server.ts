/**
 * {@link startSandbox}: a {@link Sandbox} served over real HTTP with `serveFetch`.
 * @module
 */
import { serveFetch } from "../serve.ts";
import { Sandbox } from "./sandbox.ts";
import type { SandboxOptions } from "./types.ts";

/** A running sandbox server. */
export interface RunningSandbox {
  sandbox: Sandbox;
  /** Base URL, e.g. `http://127.0.0.1:43121`. */
  url: string;
  /** Disposes the sandbox (ending every stream) and stops the server. */
  close(): Promise<void>;
}

/**
 * Starts a sandbox on loopback (port 0 = a free port). `leadingNewline` defaults to true where
 * the runtime's server holds back response headers until the first body byte (Bun; the adapter says).
 */
export async function startSandbox(
  options: SandboxOptions & { port?: number; hostname?: string } = {},
): Promise<RunningSandbox> {
  const { port, hostname, ...rest } = options;
  let sandbox: Sandbox | undefined; // set before the first request can arrive (no await in between)
  const server = await serveFetch((req) => sandbox!.app.fetch(req), { port: port ?? 0, hostname: hostname ?? "127.0.0.1" });
  sandbox = new Sandbox({ ...rest, leadingNewline: rest.leadingNewline ?? server.headersWaitForBody });
  let closing: Promise<void> | undefined;
  return {
    sandbox,
    url: server.url,
    close: () => {
      closing ??= (async () => {
        sandbox.dispose();
        await server.close();
      })();
      return closing;
    },
  };
}
