/**
 * What a stalled SSE reader costs the server (issue 24, F17): appwatch (`bench/latency/appwatch.ts`,
 * `startService` as `appwatch serve` runs it) watches the B3/B6 API server process
 * (`bench/lib/apiserver.ts`, BENCH_APPS apps) on the runtime under test; then READERS raw TCP
 * clients open `GET /v1/watch` (SSE, with the snapshot) and never read a byte. Measured from
 * outside, in the server's /proc/<pid>/status: RSS before, with the readers stalled (once it stops
 * growing), and after they close. The readers live in this process, so their buffers do not count.
 *
 *   node --import tsx bench/memory/stalled-sse.ts [--runtimes node,deno,bun] [--readers 32]
 *     [--apps 4000] [--buffers 1048576,262144] [--out FILE]
 *
 * `--buffers`: values of `--stream-buffer-bytes` to try (the bytes a stream may hold for a client
 * that does not read). Writes bench/results/stalled-sse.json (or --out) and prints a table.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import os from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { runtimeCommand } from "../lib/common.ts";
import { jsonLines } from "../lib/json-lines.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const argv = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const RUNTIMES = (opt("runtimes") ?? "node,deno,bun").split(",") as ("node" | "deno" | "bun")[];
const READERS = Number(opt("readers") ?? 32);
const APPS = Number(opt("apps") ?? 4000);
const BUFFERS = (opt("buffers") ?? "default").split(",").map((b) => (b === "default" ? undefined : Number(b)));
const OUT = opt("out") ?? join(ROOT, "bench", "results", "stalled-sse.json");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : NaN;
}

function child(cmd: string, args: string[], env: Record<string, string> = {}) {
  const proc: ChildProcess = spawn(cmd, args, { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, ...env } });
  return { proc, ...jsonLines(proc) };
}

/** Reads one SSE stream until its `synced` frame: the snapshot's size in bytes. */
function snapshotBytes(url: URL): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = connect(Number(url.port), url.hostname);
    let bytes = 0;
    let tail = "";
    s.on("connect", () => s.write(`GET /v1/watch HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`));
    s.on("data", (d: Buffer) => {
      bytes += d.byteLength;
      const text = tail + d.toString("latin1");
      tail = text.slice(-64);
      if (text.includes("event: synced")) {
        s.destroy();
        resolve(bytes);
      }
    });
    s.on("error", reject);
  });
}

/** A reader that sends its request and never reads. */
function stalledReader(url: URL): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(Number(url.port), url.hostname);
    s.on("connect", () => {
      s.pause();
      s.write(`GET /v1/watch HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`, () => resolve(s));
    });
    s.on("error", reject);
  });
}

/** RSS once it has stopped growing: no new maximum for 3 s (at most 40 s). */
async function settledRss(pid: number): Promise<number> {
  let max = rssOf(pid);
  let since = performance.now();
  const t0 = performance.now();
  while (performance.now() - since < 3000 && performance.now() - t0 < 40_000) {
    await sleep(250);
    const r = rssOf(pid);
    if (r > max * 1.002) {
      max = r;
      since = performance.now();
    }
  }
  return max;
}

const api = child(process.execPath, ["--import", "tsx", "bench/lib/apiserver.ts"], { BENCH_APPS: String(APPS) });
const { url: apiUrl } = (await api.next()).ready as { url: string };
console.error(`api server at ${apiUrl}`);
const kubeconfig = join(os.tmpdir(), `appwatch-stalled-${process.pid}.yaml`);
writeFileSync(kubeconfig, `apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster:\n    server: ${apiUrl}\nusers:\n- name: b\n  user: {}\ncontexts:\n- name: b\n  context:\n    cluster: b\n    user: b\n    namespace: bench\ncurrent-context: b\n`);

const rows: Record<string, unknown>[] = [];
for (const runtime of RUNTIMES) {
  for (const buffer of BUFFERS) {
    const [cmd, args] = runtimeCommand(runtime, "bench/latency/appwatch.ts", [], [], true);
    const settings = buffer === undefined ? {} : { streamBufferBytes: buffer };
    const server = child(cmd, [...args, kubeconfig, "bench"], { BENCH_SETTINGS: JSON.stringify(settings) });
    const ready = (await server.next()).ready as { url: string; pid: number };
    const url = new URL(ready.url);
    console.error(`${runtime}: appwatch at ${ready.url}`);
    const snapshot = await snapshotBytes(url);
    const before = await settledRss(ready.pid);
    const readers = await Promise.all(Array.from({ length: READERS }, () => stalledReader(url)));
    const stalled = await settledRss(ready.pid);
    for (const r of readers) r.destroy();
    await sleep(5000);
    const after = rssOf(ready.pid);
    const row = {
      runtime,
      streamBufferBytes: buffer ?? "default",
      readers: READERS,
      snapshotBytes: snapshot,
      rssBefore: before,
      rssStalled: stalled,
      rssAfterClose: after,
      perReaderMiB: (stalled - before) / READERS / 2 ** 20,
      keptAfterCloseMiB: (after - before) / 2 ** 20,
    };
    rows.push(row);
    console.error(
      `${runtime} buffer ${String(row.streamBufferBytes).padStart(8)}: snapshot ${(snapshot / 2 ** 20).toFixed(1)} MiB; RSS ${(before / 2 ** 20).toFixed(0)} → ${(stalled / 2 ** 20).toFixed(0)} MiB with ${READERS} stalled readers (${row.perReaderMiB.toFixed(2)} MiB each), ${(after / 2 ** 20).toFixed(0)} MiB 5 s after they closed`,
    );
    server.proc.stdin!.end();
    server.proc.kill("SIGTERM");
    await new Promise((r) => server.proc.once("exit", r));
  }
}
api.proc.stdin!.write(JSON.stringify({ exit: {} }) + "\n");
api.proc.kill();
rmSync(kubeconfig, { force: true });
writeFileSync(OUT, JSON.stringify({ benchmark: "stalled SSE readers (F17)", date: new Date().toISOString(), cpus: os.cpus().length, loadavg: os.loadavg(), rows }, null, 2) + "\n");
console.error(`wrote ${OUT}`);
process.exit(0);
