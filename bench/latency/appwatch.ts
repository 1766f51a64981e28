/**
 * B6 contender: appwatch itself, as `appwatch serve` runs it — `startService` (kubeconfig → watch →
 * Hono app → this runtime's adapter) with the settings of B3, watching one namespace of the
 * source the kubeconfig points at. It serves all three transports at once (`/v1/watch` WebSocket
 * and SSE, Connect `AppService/Watch`); `bench/latency/latency.ts` measures them one after the other.
 *
 *   node --import tsx bench/latency/appwatch.ts <kubeconfig> <namespace>
 *   deno run -A bench/latency/appwatch.ts <kubeconfig> <namespace>
 *   bun bench/latency/appwatch.ts <kubeconfig> <namespace>
 *
 * stdout: one line `{"ready":{"url":"http://…","pid":…,"version":…,"apps":n}}` once it has synced
 * and its initial Revision lookups are done; it exits when its stdin closes (its parent went away)
 * or on SIGTERM. stdin `{"probe":{}}` → `{"probe":{n,p50,p99}}`: the watch path alone (API-server
 * write → decode → convert → AppK8sClient publish, as B3's probe), from an in-process all-apps
 * subscription, since the previous probe. With BENCH_READ_PROBE=1 it also reports `readP50`/`readP99`:
 * API-server write → the chunk that carries the event arriving at the watch stream's reader (the
 * source and the socket, before appwatch decodes anything), to tell a tail upstream of appwatch from
 * one in it. Off by default: it decodes every watch chunk once more. BENCH_STALL_PROBE=1 adds
 * `stallMs`/`stallCpuMs` (the longest 5 ms tick gap and the CPU used in it).
 * @module
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { connectCluster, startService } from "../../src/service/server.ts";
import { createKubeClient } from "../../src/kube/connect.ts";
import { loadClusterConfig } from "../../src/kube/cluster-config.ts";
import { createTransport } from "../../src/kube/transport.ts";
import { DEFAULT_SETTINGS } from "../../src/service/settings/mod.ts";
import { createLogger } from "../../src/log.ts";
import { runtimeVersion } from "../lib/bare-common.ts";

const [kubeconfig, namespace] = process.argv.slice(2).filter((a) => !a.startsWith("-"));
if (!kubeconfig || !namespace) throw new Error("usage: latency/appwatch.ts <kubeconfig> <namespace>");

// The read probe: write → arrival of the chunk at the watch body's reader, per `bench t=` in it.
let reads: number[] = [];
let chunks: number[] = []; // events per chunk, of the chunks that carried any
const readProbe = process.env.BENCH_READ_PROBE === "1";
async function cluster() {
  if (!readProbe) return await connectCluster({ kubeconfig, namespaces: [namespace!] });
  const config = await loadClusterConfig({ kubeconfig });
  const text = new TextDecoder();
  const scan = (chunk: Uint8Array) => {
    const at = performance.timeOrigin + performance.now();
    const s = text.decode(chunk);
    let n = 0;
    for (let i = s.indexOf("bench t="); i >= 0; i = s.indexOf("bench t=", i + 8)) {
      const t = Number(s.slice(i + 8, s.indexOf(" ", i + 8)));
      if (Number.isFinite(t)) reads.push(at - t / 1000), n++;
    }
    if (n > 0) chunks.push(n);
  };
  const probed = (body: ReadableStream<Uint8Array>) => ({
    getReader() {
      const r = body.getReader();
      return {
        async read() {
          const x = await r.read();
          if (!x.done) scan(x.value);
          return x;
        },
        cancel: (reason?: unknown) => r.cancel(reason),
        releaseLock: () => r.releaseLock(),
      };
    },
    cancel: (reason?: unknown) => body.cancel(reason),
  });
  const client = await createKubeClient(config, {
    createTransport: async (tls) => {
      const t = await createTransport(tls, { server: config.server });
      return {
        close: () => t.close(),
        fetch: async (input, init) => {
          const res = await t.fetch(input, init);
          if (!String(input).includes("watch=") || !res.body) return res;
          const body = probed(res.body);
          return new Proxy(res, { get: (target, key) => {
            if (key === "body") return body;
            const v = Reflect.get(target, key, target);
            return typeof v === "function" ? v.bind(target) : v;
          } }) as Response;
        },
      };
    },
  });
  return { client, namespaces: [namespace!], describe: client.server, close: () => client.close() };
}

const service = await startService({
  ...DEFAULT_SETTINGS,
  port: 0,
  host: "127.0.0.1",
  baseDomain: "apps.example.com",
  scheme: "https",
  maxConnectionsPerClient: 1_000_000,
  shutdownTimeoutSeconds: 2,
  // Other settings under test (e.g. bench/memory/stalled-sse.ts: streamBufferBytes), as JSON.
  ...(process.env.BENCH_SETTINGS ? JSON.parse(process.env.BENCH_SETTINGS) as Record<string, unknown> : {}),
}, { logger: createLogger({ level: "warn", sink: (l) => process.stderr.write(l + "\n") }), cluster: await cluster() });
await service.watching;
// The initial conversions look up every app's Revision (404 here) in the background: let them finish.
const synced = service.apps.metrics.events.create;
for (let i = 0; i < 600 && service.apps.metrics.revisionRequests < synced; i++) await new Promise((r) => setTimeout(r, 50));
await new Promise((r) => setTimeout(r, 500));

// The watch-path probe: one in-process all-apps subscription (no transport).
let probe: number[] = [];
const probeSub = service.apps.subscribe("");
void (async () => {
  for await (const e of probeSub) {
    const app = "updateEvent" in e ? e.updateEvent.updatedApp : undefined;
    const msg = app?.status?.conditions?.find((c) => c.message?.startsWith("bench t="))?.message;
    if (msg) probe.push(performance.timeOrigin + performance.now() - Number(msg.slice(8, msg.indexOf(" ", 8))) / 1000);
  }
})();
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]! : null;
};
// Where a probe's tail comes from: the event loop's longest stalls and the GC pauses since the
// last probe (node:perf_hooks; a runtime without them reports null).
const loopDelay = (() => {
  try {
    const h = monitorEventLoopDelay({ resolution: 5 });
    h.enable();
    return h;
  } catch {
    return undefined;
  }
})();
// BENCH_STALL_PROBE=1: the longest gap between 5 ms ticks and the CPU this process used in it: a
// gap the process spent computing is ours; a gap with little CPU is the process not being scheduled
// (shared cores, VM). Off by default: its `process.cpuUsage()` 200 times a second was 3 % of the
// contender's CPU in a profile (12-07), a cost the relay does not pay.
let stall = { ms: NaN, cpuMs: NaN };
const stallProbe = process.env.BENCH_STALL_PROBE === "1";
if (stallProbe) {
  stall = { ms: 0, cpuMs: 0 };
  let lastAt = performance.now();
  let lastCpu = process.cpuUsage();
  setInterval(() => {
    const now = performance.now();
    const cpu = process.cpuUsage();
    const gap = now - lastAt;
    if (gap > stall.ms) stall = { ms: gap, cpuMs: (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000 };
    lastAt = now;
    lastCpu = cpu;
  }, 5).unref?.();
}
let gc: number[] = [];
try {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gc.push(e.duration);
  }).observe({ entryTypes: ["gc"] });
} catch { /* no GC entries on this runtime */ }
createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.includes("probe")) return;
  const loop = loopDelay && loopDelay.count > 0 ? { loopP99: loopDelay.percentile(99) / 1e6, loopMax: loopDelay.max / 1e6 } : { loopP99: null, loopMax: null };
  const gcs = { gcCount: gc.length, gcMs: gc.reduce((a, b) => a + b, 0), gcMax: gc.length ? Math.max(...gc) : null };
  process.stdout.write(JSON.stringify({ probe: { n: probe.length, p50: pct(probe, 50), p99: pct(probe, 99), ...loop, ...gcs, ...(stallProbe ? { stallMs: stall.ms, stallCpuMs: stall.cpuMs } : {}), ...(readProbe ? { readN: reads.length, readP50: pct(reads, 50), readP99: pct(reads, 99), readChunks: chunks.length, eventsPerChunkP99: pct(chunks, 99), eventsPerChunkMax: chunks.length ? Math.max(...chunks) : null } : {}) } }) + "\n");
  probe = [];
  reads = [];
  chunks = [];
  if (stallProbe) stall = { ms: 0, cpuMs: 0 };
  gc = [];
  loopDelay?.reset();
});

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  setTimeout(() => process.exit(0), 3000);
  await service.stop().catch(() => undefined);
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.stdin.on("end", () => void stop());
process.stdin.on("close", () => void stop());
process.stdin.resume();
process.stdout.write(JSON.stringify({ ready: { url: service.url, pid: process.pid, version: runtimeVersion(), apps: synced } }) + "\n");
