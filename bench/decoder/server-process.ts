/**
 * Starts `bench/decoder/server.ts` as a child Node process and hands back its URL and
 * stream facts; `close()` stops it (SIGTERM, then SIGKILL). The child also
 * exits by itself when our end of its stdin closes, so it cannot outlive us.
 * Uses `node:child_process`, which Deno (with `-A`), Bun and Node all provide.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";
import type { ServerMeta } from "./server.ts";

/** The repository root (the parent of `bench/`). */
export const REPO_ROOT: string = fileURLToPath(new URL("../..", import.meta.url));

/** A running benchmark server process. */
export interface BenchServer {
  readonly meta: ServerMeta;
  readonly child: ChildProcess;
  /** Stops the process; resolves once it has exited. Safe to call twice. */
  close(): Promise<void>;
}

function nodeBinary(): string {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  return g.Deno === undefined && g.Bun === undefined ? process.execPath : "node";
}

/** Spawns the server for `events` events and waits until it listens (or fails). */
export function startBenchServer(events: number, options: { timeoutMs?: number } = {}): Promise<BenchServer> {
  const child = spawn(nodeBinary(), ["--import", "tsx", "bench/decoder/server.ts", "--events", String(events)], {
    cwd: REPO_ROOT,
    stdio: ["pipe", "pipe", "inherit"],
  });
  let exited = child.exitCode !== null;
  const exit = new Promise<void>((resolve) => {
    child.once("exit", () => {
      exited = true;
      resolve();
    });
    child.once("error", () => {
      exited = true;
      resolve();
    });
  });
  const close = async (): Promise<void> => {
    if (exited) return;
    child.stdin?.end();
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
    await exit;
    clearTimeout(timer);
  };
  return new Promise<BenchServer>((resolve, reject) => {
    let out = "";
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      close().finally(() => reject(err));
    };
    const timer = setTimeout(() => fail(new Error("bench server did not start in time")), options.timeoutMs ?? 60_000);
    child.once("error", (err) => fail(err));
    child.once("exit", (code, signal) => fail(new Error(`bench server exited early (code ${code}, signal ${signal})`)));
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (data: string) => {
      out += data;
      const nl = out.indexOf("\n");
      if (nl === -1 || settled) return;
      let meta: ServerMeta;
      try {
        meta = JSON.parse(out.slice(0, nl)) as ServerMeta;
      } catch (err) {
        fail(err as Error);
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve({ meta, child, close });
    });
  });
}
