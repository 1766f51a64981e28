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
 * subscription, since the previous probe.
 * @module
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { connectCluster, startService } from "../../src/service/server.ts";
import { DEFAULT_SETTINGS } from "../../src/service/settings/mod.ts";
import { createLogger } from "../../src/log.ts";
import { runtimeVersion } from "../lib/bare-common.ts";

const [kubeconfig, namespace] = process.argv.slice(2).filter((a) => !a.startsWith("-"));
if (!kubeconfig || !namespace) throw new Error("usage: latency/appwatch.ts <kubeconfig> <namespace>");

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
}, { logger: createLogger({ level: "warn", sink: (l) => process.stderr.write(l + "\n") }), cluster: await connectCluster({ kubeconfig, namespaces: [namespace] }) });
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
// The longest gap between 5 ms ticks and the CPU this process used in it: a gap the process spent
// computing is ours; a gap with little CPU is the process not being scheduled (shared cores, VM).
let stall = { ms: 0, cpuMs: 0 };
{
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
  process.stdout.write(JSON.stringify({ probe: { n: probe.length, p50: pct(probe, 50), p99: pct(probe, 99), ...loop, ...gcs, stallMs: stall.ms, stallCpuMs: stall.cpuMs } }) + "\n");
  probe = [];
  stall = { ms: 0, cpuMs: 0 };
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
