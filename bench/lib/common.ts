/**
 * Shared helpers of the initial-sync (B2), soak (B5) and memory (B7) benchmarks (and the
 * repository root and CPU time for the others: B1-wasm, B3/B6's API server and load process): which
 * runtime this is, forced GC, memory and file-descriptor readings from
 * /proc (Linux), active handles, and spawning a helper process of the
 * current runtime. Imports nothing heavy: the "bare runtime" measurement
 * loads this module too.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

interface DenoGlobal {
  version: { deno: string; v8: string };
  execPath(): string;
}
interface BunGlobal {
  version: string;
  revision: string;
  gc(force: boolean): void;
}
const g = globalThis as unknown as { Deno?: DenoGlobal; Bun?: BunGlobal; gc?: () => void };

export type RuntimeName = "node" | "deno" | "bun";
export const runtime: RuntimeName = g.Deno ? "deno" : g.Bun ? "bun" : "node";
export const TITLES: Record<RuntimeName, string> = { node: "Node", deno: "Deno", bun: "Bun" };

/** The repository root (the parent of `bench/`). */
export const REPO_ROOT: string = fileURLToPath(new URL("../..", import.meta.url));

export function runtimeVersion(): string {
  if (g.Deno) return `Deno ${g.Deno.version.deno} (V8 ${g.Deno.version.v8})`;
  if (g.Bun) return `Bun ${g.Bun.version} (JavaScriptCore, ${g.Bun.revision.slice(0, 9)})`;
  return `Node ${process.version.slice(1)} (V8 ${process.versions.v8})`;
}

/** A full, forced GC where the runtime offers one; true if it did. */
export function fullGc(): boolean {
  if (g.Bun) {
    g.Bun.gc(true);
    return true;
  }
  if (typeof g.gc === "function") {
    g.gc();
    g.gc();
    return true;
  }
  return false;
}

/** VmRSS and VmHWM (peak RSS) of this process in bytes, from /proc/self/status. */
/** CPU seconds (user + system) this process has used: /proc when there is one, else `process.cpuUsage()`. */
export function cpuSeconds(): number {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  }
}

export function procMemory(): { rss: number; hwm: number } {
  const text = readFileSync("/proc/self/status", "utf8");
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(text)?.[1] ?? NaN) * 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

/** Resets VmHWM to the current RSS (Linux: `5` into /proc/self/clear_refs); true if it worked. */
export function resetPeak(): boolean {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
    return true;
  } catch {
    return false;
  }
}

/** JS heap in use (bytes), where the runtime reports it. */
export function heapUsed(): number | undefined {
  try {
    return process.memoryUsage().heapUsed;
  } catch {
    return undefined;
  }
}

/** Open file descriptors of this process, split into sockets and the rest (Linux /proc/self/fd). */
export function openFds(): { total: number; sockets: number } {
  let total = 0;
  let sockets = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    total++;
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith("socket:")) sockets++;
    } catch { /* closed meanwhile */ }
  }
  return { total, sockets };
}

/**
 * Active handles by type (`process.getActiveResourcesInfo()`: Node; Deno and Bun
 * provide the function too, with varying coverage), or undefined.
 */
export function activeResources(): Record<string, number> | undefined {
  const f = (process as unknown as { getActiveResourcesInfo?: () => string[] }).getActiveResourcesInfo;
  if (typeof f !== "function") return undefined;
  try {
    const out: Record<string, number> = {};
    for (const t of f.call(process)) out[t] = (out[t] ?? 0) + 1;
    return out;
  } catch {
    return undefined;
  }
}

/** The command that runs a script of this repository on the current runtime, with GC exposed. */
export function selfCommand(script: string): { cmd: string; args: string[] } {
  if (g.Deno) return { cmd: g.Deno.execPath(), args: ["run", "-A", "--v8-flags=--expose-gc", script] };
  if (g.Bun) return { cmd: process.execPath, args: [script] };
  // On Node, appwatch as it ships (dist/, see bench/lib/shipped.mjs), not through tsx's keepNames.
  return { cmd: process.execPath, args: ["--import", "tsx", "--import", "./bench/lib/shipped.mjs", "--expose-gc", script] };
}

/**
 * The command a Node-run driver uses to start a script of this repository on `runtime`, from
 * the repository root: Deno and Bun from node_modules/.bin, Node through tsx. appwatch's own
 * server script on Node loads `dist/` as it ships (bench/lib/shipped.mjs), not tsx's keepNames.
 */
export function runtimeCommand(runtime: RuntimeName, script: string, args: string[] = [], flags: string[] = [], shipped = false): [string, string[]] {
  if (runtime === "deno") return [join(REPO_ROOT, "node_modules", ".bin", "deno"), ["run", "-A", ...flags, script, ...args]];
  if (runtime === "bun") return [join(REPO_ROOT, "node_modules", ".bin", "bun"), [...flags, script, ...args]];
  return [process.execPath, [...flags, "--import", "tsx", ...(shipped ? ["--import", "./bench/lib/shipped.mjs"] : []), script, ...args]];
}

function nodeBinary(): string {
  return g.Deno === undefined && g.Bun === undefined ? process.execPath : "node";
}

/** A Node helper process (a benchmark server) that prints one JSON line when ready. */
export interface HelperProcess<M> {
  readonly meta: M;
  readonly child: ChildProcess;
  close(): Promise<void>;
}

/** Starts `node --import tsx <script> ...args`, resolves with its first stdout line parsed as JSON. */
export function startNodeHelper<M>(script: string, args: string[], timeoutMs = 300_000): Promise<HelperProcess<M>> {
  const child = spawn(nodeBinary(), ["--import", "tsx", script, ...args], { cwd: REPO_ROOT, stdio: ["pipe", "pipe", "inherit"] });
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    child.once("exit", () => ((exited = true), resolve()));
    child.once("error", () => ((exited = true), resolve()));
  });
  const close = async () => {
    if (exited) return;
    child.stdin?.end();
    child.kill("SIGTERM");
    const t = setTimeout(() => child.kill("SIGKILL"), 3000);
    await exit;
    clearTimeout(t);
  };
  return new Promise((resolve, reject) => {
    let out = "";
    let settled = false;
    const fail = (e: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void close().finally(() => reject(e));
    };
    const timer = setTimeout(() => fail(new Error(`${script} did not start in time`)), timeoutMs);
    child.once("exit", (code, signal) => fail(new Error(`${script} exited early (code ${code}, signal ${signal})`)));
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (d: string) => {
      out += d;
      const nl = out.indexOf("\n");
      if (nl < 0 || settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        resolve({ meta: JSON.parse(out.slice(0, nl)) as M, child, close });
      } catch (e) {
        void close();
        reject(e);
      }
    });
  });
}

/** Runs a script of the current runtime to completion; resolves with its last stdout line parsed as JSON. */
export function runSelf<R>(script: string, env: Record<string, string>, timeoutMs = 300_000): Promise<R> {
  const { cmd, args } = selfCommand(script);
  const child = spawn(cmd, args, { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env, NO_COLOR: "1" } });
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${script} ${JSON.stringify(env)}: no result after ${timeoutMs} ms (hung)`));
    }, timeoutMs);
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-4000)));
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      const last = out.trim().split("\n").pop() ?? "";
      if (code !== 0) return reject(new Error(`${script} ${JSON.stringify(env)} exited ${code}: ${err.trim().split("\n").slice(-5).join(" | ")}`));
      try {
        resolve(JSON.parse(last) as R);
      } catch {
        reject(new Error(`${script}: no JSON result (stdout tail: ${out.slice(-300)}; stderr: ${err.slice(-300)})`));
      }
    });
  });
}

/** Median of a non-empty list. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** MiB (2^20 bytes), one decimal. */
export function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(1);
}

/**
 * Counts live timers by wrapping the global `setTimeout`/`setInterval` and their
 * `clear*` (works the same on every runtime; code that calls the globals after
 * this is installed is counted). Returns a function giving the live counts.
 */
export function installTimerCounter(): () => { timeouts: number; intervals: number } {
  const gt = globalThis as unknown as Record<string, (...args: unknown[]) => unknown>;
  const liveTimeouts = new Set<unknown>();
  const liveIntervals = new Set<unknown>();
  const setT = gt.setTimeout!;
  const clearT = gt.clearTimeout!;
  const setI = gt.setInterval!;
  const clearI = gt.clearInterval!;
  gt.setTimeout = function (fn: unknown, ms?: unknown, ...args: unknown[]) {
    let id: unknown;
    const wrapped = typeof fn === "function"
      ? (...a: unknown[]) => {
        liveTimeouts.delete(id);
        return (fn as (...x: unknown[]) => unknown)(...a);
      }
      : fn;
    id = setT.call(globalThis, wrapped, ms, ...args);
    liveTimeouts.add(id);
    return id;
  };
  gt.clearTimeout = function (id: unknown) {
    liveTimeouts.delete(id);
    return clearT.call(globalThis, id);
  };
  gt.setInterval = function (...a: unknown[]) {
    const id = setI.call(globalThis, ...a);
    liveIntervals.add(id);
    return id;
  };
  gt.clearInterval = function (id: unknown) {
    liveIntervals.delete(id);
    liveTimeouts.delete(id); // clearInterval also clears timeouts (and vice versa) on the web platform
    return clearI.call(globalThis, id);
  };
  const origClearT = gt.clearTimeout;
  gt.clearTimeout = function (id: unknown) {
    liveIntervals.delete(id);
    return origClearT.call(globalThis, id);
  };
  return () => ({ timeouts: liveTimeouts.size, intervals: liveIntervals.size });
}
