/**
 * B3 fan-out: one appwatch process with thousands of WebSocket subscribers
 * while KService changes arrive at 1,000/s.
 *
 *   node --import tsx --import ./bench/lib/shipped.mjs bench/fanout/fanout.ts   # on Node, as it ships (dist/)
 *   npx deno run -A bench/fanout/fanout.ts          # … on Deno
 *   npx bun bench/fanout/fanout.ts                  # … on Bun
 *
 * This process IS the appwatch server under test: `startService` (the real
 * `appwatch serve` path: kubeconfig → watch → Hono app → this runtime's
 * adapter) watching namespace `bench` of a separate API-server process
 * (`bench/lib/apiserver.ts`, the sandbox on Node, seeded with
 * BENCH_APPS = 1,000 realistic ~5 KB app KServices). A separate load process
 * (`bench/lib/load.ts`, Node + `ws`) opens the subscribers: 4 all-apps,
 * 5 % per project+domain, the rest per app (round-robin over the apps).
 *
 * 1. Idle memory: RSS of this process after a GC with 0 subscribers, then at
 *    each step of BENCH_IDLE_STEPS; per-subscriber RSS = ΔRSS / N.
 * 2. Knee search: for N in BENCH_STEPS (subscribers kept open between steps),
 *    the API server writes BENCH_RATE status changes/s for BENCH_SECONDS,
 *    round-robin over the apps, each stamped with its write time
 *    (`bench t=<ms> s=<seq>` in the Ready condition message). The load
 *    process measures latency (receive − write) for every delivered event and
 *    checks counts against the writes per app. Server CPU from /proc/self/stat
 *    over the drive. Stops after the first step with p99 > 100 ms or loss.
 *
 * 3. `--bare` (or BENCH_BARE=1): the limit. A bare broadcast server of this
 *    runtime with no appwatch code (`bare-{node,deno,bun}.ts`) runs
 *    beside appwatch and is driven by the same load process: its subscribers
 *    (same mix, same queries) are a second group there. The frames it sends
 *    are appwatch's own bytes, captured over a WebSocket (the start frame
 *    before the idle phase, one update frame per app after it) and stamped by
 *    the bare server at its send, at the same rate and with the API server's
 *    round-robin loop. Idle memory is measured for both (the same GC, the
 *    same deltas); in the knee search the contenders alternate at every step
 *    (appwatch first at even steps, bare first at odd ones), each stopping
 *    after its own knee. The results go into the same JSON file under `bare`.
 *
 * Env: BENCH_APPS (1000), BENCH_RATE (1000), BENCH_SECONDS (10),
 * BENCH_STEPS ("500,1000,2000,4000,8000,12000,16000"), BENCH_IDLE_STEPS
 * ("1000,4000,8000,16000"), BENCH_RESULT_FILE (default
 * bench/results/fanout-<runtime>.json). Writes bench/results/B3.md from every
 * fanout-*.json present (see report.ts).
 * @module
 */
import process from "node:process";
import os from "node:os";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { jsonLines } from "../lib/json-lines.ts";
import { connectCluster, startService } from "../../src/service/server.ts";
import { DEFAULT_SETTINGS } from "../../src/service/settings/mod.ts";
import { createLogger } from "../../src/log.ts";
import { writeB3 } from "./report.ts";
import { startBare } from "./bare-driver.ts";
import { type AppRef, subscribers as mix } from "../lib/fixtures.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const num = (name: string, d: number) => Number(process.env[name] ?? d);
const list = (name: string, d: string) => (process.env[name] ?? d).split(",").map(Number).filter((n) => n > 0);
const APPS = num("BENCH_APPS", 1000);
const RATE = num("BENCH_RATE", 1000);
const SECONDS = num("BENCH_SECONDS", 10);
const STEPS = list("BENCH_STEPS", "500,1000,2000,4000,8000,12000,16000");
const IDLE_STEPS = list("BENCH_IDLE_STEPS", "1000,4000,8000,16000");
const ALL_SUBS = 4;
const subscribers = (from: number, to: number, apps: AppRef[]) => mix(from, to, apps, ALL_SUBS);
const P99_GOAL_MS = 100;
const BARE = process.argv.includes("--bare") || process.env.BENCH_BARE === "1";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const RUNTIME: "node" | "deno" | "bun" = g.Deno?.version?.deno ? "deno" : g.Bun ? "bun" : "node";
const RESULT_FILE = process.env.BENCH_RESULT_FILE ?? join(ROOT, "bench", "results", `fanout-${RUNTIME}.json`);

function runtimeVersion(): string {
  if (RUNTIME === "deno") return `Deno ${g.Deno.version.deno} (V8 ${g.Deno.version.v8})`;
  if (RUNTIME === "bun") return `Bun ${g.Bun.version} (JavaScriptCore)`;
  const form = process.env.APPWATCH_SHIPPED_BUILT ? "appwatch from dist/, as it ships" : "appwatch through tsx (keepNames): not the shipped form, see bench/lib/shipped.mjs";
  return `Node ${process.versions.node} (V8 ${process.versions.v8}; ${form})`;
}

// ------------------------------------------------------------------ process stats

function cpuSeconds(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** Busy CPU seconds of the whole machine (Linux /proc/stat). */
function machineBusySeconds(): number {
  const f = (readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  return ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)) / 100;
}

/** Node and Deno (both have `node:inspector`), BENCH_CPU_PROF=<file>: a V8 CPU profile of this process over each appwatch drive (last one kept). */
async function profiler(): Promise<{ start(): Promise<void>; stop(): Promise<void> } | undefined> {
  const file = process.env.BENCH_CPU_PROF;
  if (!file || RUNTIME === "bun") return undefined;
  const inspector = await import("node:inspector");
  const session = new inspector.Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => session.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))));
  await post("Profiler.enable");
  return {
    start: async () => void (await post("Profiler.start")),
    stop: async () => {
      const { profile } = await post("Profiler.stop") as { profile: unknown };
      writeFileSync(file, JSON.stringify(profile));
    },
  };
}

function rssBytes(): number {
  const statm = readFileSync("/proc/self/statm", "utf8").split(" ");
  return Number(statm[1]) * 4096;
}

type Mem = { heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };
/** The JS heap and the engine's external memory (`process.memoryUsage()`; Bun: JavaScriptCore's numbers). */
function memBreakdown(): Mem {
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external ?? 0, arrayBuffers: m.arrayBuffers ?? 0 };
}

/** A full GC, by whatever this runtime offers; false when none is available. */
async function fullGc(): Promise<boolean> {
  let gcFn: (() => void) | undefined = typeof g.gc === "function" ? () => g.gc() : g.Bun?.gc ? () => g.Bun.gc(true) : undefined;
  if (!gcFn) {
    try {
      const v8 = await import("node:v8");
      const vm = await import("node:vm");
      v8.setFlagsFromString("--expose-gc");
      const fn = vm.runInNewContext("gc");
      if (typeof fn === "function") gcFn = fn;
    } catch { /* none */ }
  }
  if (!gcFn) return false;
  for (let i = 0; i < 3; i++) {
    gcFn();
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

// ------------------------------------------------------------------ child processes

interface Child {
  proc: ChildProcess;
  next(): Promise<Record<string, unknown>>;
  send(cmd: unknown): Promise<Record<string, unknown>>;
}

function child(script: string, env: Record<string, string> = {}): Child {
  const proc = spawn("node", ["--import", "tsx", script], { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, ...env } });
  const { next, send } = jsonLines(proc);
  proc.once("exit", (code) => {
    if (code !== 0 && code !== null) {
      console.error(`BENCHMARK FAILED: ${script} exited with ${code}`);
      process.exit(1);
    }
  });
  return {
    proc,
    next,
    send,
  };
}

// ------------------------------------------------------------------ subscribers

function metricValue(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(name + " ") || line.startsWith(name + "{")) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

// ------------------------------------------------------------------ main

const t0 = performance.now();
console.error(`B3 fan-out: appwatch server on ${runtimeVersion()}; ${APPS} apps, ${RATE} changes/s for ${SECONDS} s per step`);
const api = child("bench/lib/apiserver.ts", { BENCH_APPS: String(APPS) });
const ready = (await api.next()).ready as { url: string; namespace: string; apps: AppRef[] };
const kubeconfig = join(os.tmpdir(), `appwatch-fanout-${process.pid}.yaml`);
writeFileSync(
  kubeconfig,
  `apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n    server: ${ready.url}\nusers:\n- name: bench\n  user: {}\ncontexts:\n- name: bench\n  context:\n    cluster: bench\n    user: bench\n    namespace: ${ready.namespace}\ncurrent-context: bench\n`,
);
const logs: string[] = [];
const service = await startService({
  ...DEFAULT_SETTINGS,
  port: 0,
  host: "127.0.0.1",
  baseDomain: "apps.example.com",
  scheme: "https",
  maxConnectionsPerClient: 1_000_000,
  shutdownTimeoutSeconds: 5,
}, { logger: createLogger({ level: "warn", sink: (l) => logs.length < 50 && logs.push(l) }), cluster: await connectCluster({ kubeconfig, namespaces: [ready.namespace] }) });
await service.watching;
rmSync(kubeconfig, { force: true });
// The initial conversions look up every app's Revision (404 here) in the background: let them finish.
const synced = service.apps.metrics.events.create;
for (let i = 0; i < 600 && service.apps.metrics.revisionRequests < synced; i++) await new Promise((r) => setTimeout(r, 50));
await new Promise((r) => setTimeout(r, 1000));
const wsUrl = service.url.replace(/^http/, "ws");
console.error(`  synced ${service.apps.metrics.events.create} apps from ${ready.url}; serving ${service.url}`);

// A probe subscription inside this process: latency of the watch path alone (API-server write →
// decode → convert → AppK8sClient publish → subscription), without the WebSocket hop.
let probe: number[] = [];
const probeSub = service.apps.subscribe("");
void (async () => {
  for await (const e of probeSub) {
    const app = "updateEvent" in e ? e.updateEvent.updatedApp : undefined;
    const msg = app?.status?.conditions?.find((c) => c.message?.startsWith("bench t="))?.message;
    if (msg) probe.push(Date.now() - Number(msg.slice(8, msg.indexOf(" ", 8))));
  }
})();
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]! : NaN;
};

/**
 * How late a 10 ms timer fires in this process over a step: a stalled event loop (long tasks, GC
 * pauses, CPU starvation) delays every event the same way, whatever the watch or the sockets do.
 */
function loopLag(): { stop(): number[] } {
  const lags: number[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    lags.push(Math.max(0, now - last - 10));
    last = now;
  }, 10);
  return { stop: () => (clearInterval(timer), lags) };
}

const load = child("bench/lib/load.ts");
const bare = BARE ? await startBare(ROOT) : undefined;
if (bare) {
  // The bare server's sockets get appwatch's own start frame (the load process waits for it).
  const { start } = (await load.send({ capture: { url: wsUrl, query: "snapshot=false" } })).capturing as { start: string };
  await load.send({ captured: { n: 0 } });
  await bare.send({ frames: { start } });
  console.error(`  bare server: ${bare.version} at ${bare.url} (pid ${bare.pid}); start frame ${start}`);
}
const gcAvailable = await fullGc();
// Diagnostic (Node): BENCH_HEAP_SNAPSHOT_DIR=dir writes a heap snapshot at 0 subscribers and after each idle step (diff them by constructor to see what a subscriber holds).
const SNAPSHOT_DIR = process.env.BENCH_HEAP_SNAPSHOT_DIR;
const snapshot = async (n: number) => {
  if (!SNAPSHOT_DIR || RUNTIME !== "node") return;
  const v8 = await import("node:v8");
  console.error(`  heap snapshot: ${v8.writeHeapSnapshot(join(SNAPSHOT_DIR, `idle-${n}.heapsnapshot`))}`);
};
await snapshot(0);
const rss0 = rssBytes();
const mem0 = memBreakdown();
const bareMem = async () => (await bare!.send({ mem: {} })).mem as Mem & { rss: number; gc: boolean; sockets: number };
// A fresh process gives memory back for a while after its start-up (Node: tsx's compile): settle first.
if (bare) {
  await bareMem();
  await new Promise((r) => setTimeout(r, 1000));
}
const bareMem0 = bare ? await bareMem() : undefined;
let open = 0;
let bareOpen = 0;

type Idle = { subscribers: number; rssBytes: number; perSubscriberBytes: number; openMs: number; mem: Mem; memPerSubscriber: Mem };
const perSub = (mem: Mem, base: Mem, n: number): Mem => ({ heapUsed: (mem.heapUsed - base.heapUsed) / n, heapTotal: (mem.heapTotal - base.heapTotal) / n, external: (mem.external - base.external) / n, arrayBuffers: (mem.arrayBuffers - base.arrayBuffers) / n });
const idleLine = (who: string, s: Idle, base: number) =>
  `  ${who}idle ${s.subscribers} subscribers: RSS ${(s.rssBytes / 2 ** 20).toFixed(1)} MiB (+${((s.rssBytes - base) / 2 ** 20).toFixed(1)}), ${(s.perSubscriberBytes / 1024).toFixed(1)} KiB/subscriber; ` +
  `per subscriber: JS heap used ${(s.memPerSubscriber.heapUsed / 1024).toFixed(1)} KiB (heap total ${(s.memPerSubscriber.heapTotal / 1024).toFixed(1)}), external ${(s.memPerSubscriber.external / 1024).toFixed(1)} KiB, array buffers ${(s.memPerSubscriber.arrayBuffers / 1024).toFixed(1)} KiB`;

// 1. Idle memory (appwatch, then the bare server at the same subscriber count).
const idle: Idle[] = [];
const bareIdle: Idle[] = [];
for (const n of IDLE_STEPS) {
  const opened = (await load.send({ open: { url: wsUrl, subs: subscribers(open, n, ready.apps) } })).opened as { n: number; ms: number; failed: number };
  open = opened.n;
  if (opened.failed) console.error(`  ${opened.failed} subscribers failed to open`);
  await new Promise((r) => setTimeout(r, 500));
  await fullGc();
  const rss = rssBytes();
  const mem = memBreakdown();
  const s: Idle = { subscribers: open, rssBytes: rss, perSubscriberBytes: (rss - rss0) / open, openMs: opened.ms, mem, memPerSubscriber: perSub(mem, mem0, open) };
  idle.push(s);
  console.error(idleLine("", s, rss0));
  await snapshot(open);
  if (bare && bareMem0) {
    const o = (await load.send({ open: { url: bare.url, group: "bare", subs: subscribers(bareOpen, n, ready.apps) } })).opened as { n: number; ms: number; failed: number };
    bareOpen = o.n;
    if (o.failed) console.error(`  ${o.failed} bare subscribers failed to open`);
    await new Promise((r) => setTimeout(r, 500));
    const m = await bareMem();
    const b: Idle = { subscribers: bareOpen, rssBytes: m.rss, perSubscriberBytes: (m.rss - bareMem0.rss) / bareOpen, openMs: o.ms, mem: m, memPerSubscriber: perSub(m, bareMem0, bareOpen) };
    bareIdle.push(b);
    console.error(idleLine("bare ", b, bareMem0.rss));
  }
}
await load.send({ close: { keep: Math.min(STEPS[0] ?? 0, open) } });
open = Math.min(STEPS[0] ?? 0, open);
if (bare) {
  await load.send({ close: { keep: Math.min(STEPS[0] ?? 0, bareOpen), group: "bare" } });
  bareOpen = Math.min(STEPS[0] ?? 0, bareOpen);
}
await new Promise((r) => setTimeout(r, 1000));

const STAMP = /bench t=\d+ s=\d+/;
if (bare) {
  // Appwatch's update frame for every app, as one all-apps subscriber receives it: one write per
  // app (the API server's round-robin), captured as text and split around the first stamp
  // (`updatedApp`'s; an `oldApp`, when present, keeps its captured one).
  await load.send({ capture: { url: wsUrl, query: "snapshot=false" } });
  await api.send({ drive: { rate: RATE, seconds: APPS / RATE } });
  const got = ((await load.send({ captured: { n: APPS } })).captured as { frames: string[] }).frames;
  const byKey = new Map<string, { prefix: string; suffix: string }>();
  for (const f of got) {
    const id = (JSON.parse(f) as { updateEvent?: { updatedApp?: { metadata?: { id?: { project?: string; domain?: string; name?: string } } } } })
      .updateEvent?.updatedApp?.metadata?.id;
    const m = STAMP.exec(f);
    if (!id || !m) continue;
    byKey.set(`${id.project}/${id.domain}/${id.name}`, { prefix: f.slice(0, m.index), suffix: f.slice(m.index + m[0].length) });
  }
  const apps = ready.apps.map((a) => {
    const key = `${a.project}/${a.domain}/${a.app}`;
    const t = byKey.get(key);
    if (!t) throw new Error(`no captured frame for ${key} (${got.length} frames captured)`);
    return { key, ...t };
  });
  const bytes = apps.reduce((s, a) => s + a.prefix.length + a.suffix.length, 0) / apps.length;
  await bare.send({ frames: { apps } });
  console.error(`  captured ${apps.length} update frames from appwatch (≈ ${Math.round(bytes + 25)} B each) for the bare server`);
}

// 2. Knee search under load.
type Step = Record<string, unknown> & { subscribers: number; p99: number; lost: number; received: number; serverCpuSeconds: number };
const steps: Step[] = [];
const bareSteps: Step[] = [];
let knee: number | undefined;
let bareKnee: number | undefined;
/** Sockets the load process may hold (its open-file limit is 20,000 here): above it the idle contender's subscribers are closed first. */
const FD_BUDGET = num("BENCH_FD_BUDGET", 18_000);

function common(rep: Record<string, unknown> & { received: number; lost: number; latencyMs: Record<string, number>; cpuSeconds: number; expected: number }, driven: { writes: number; seconds: number; maxLagMs: number }, wall: number, loadCpu0: number) {
  return {
    writes: driven.writes,
    driveSeconds: driven.seconds,
    writerMaxLagMs: driven.maxLagMs,
    measuredSeconds: wall,
    expected: rep.expected,
    received: rep.received,
    lost: rep.lost,
    extra: rep.extra,
    lossySubs: rep.lossySubs,
    outOfOrder: rep.outOfOrder,
    byKind: rep.byKind,
    closedUnexpectedly: rep.closedUnexpectedly,
    deliveredPerSec: rep.received / driven.seconds,
    p50: rep.latencyMs.p50!,
    p90: rep.latencyMs.p90!,
    p99: rep.latencyMs.p99!,
    p999: rep.latencyMs.p999!,
    maxMs: rep.latencyMs.max!,
    loadCpuCores: (rep.cpuSeconds - loadCpu0) / wall,
  };
}

async function appwatchStep(n: number, order: number): Promise<Step> {
  if (n > open) {
    if (bare && n + bareOpen > FD_BUDGET) bareOpen = ((await load.send({ close: { keep: 0, group: "bare" } })).closed as { open: number }).open;
    const opened = (await load.send({ open: { url: wsUrl, subs: subscribers(open, n, ready.apps) } })).opened as { n: number };
    open = opened.n;
  }
  await new Promise((r) => setTimeout(r, 500));
  await load.send({ reset: {} });
  probe = [];
  const m0 = service.api.metrics.render(service.apps);
  const loadCpu0 = (await load.send({ cpu: {} })).cpu as number;
  const prof = await profiler();
  await prof?.start();
  const lag = loopLag();
  const busy0 = machineBusySeconds();
  const cpu0 = cpuSeconds();
  const w0 = performance.now();
  const driven = (await api.send({ drive: { rate: RATE, seconds: SECONDS } })).driven as { writes: number; perApp: number[]; seconds: number; maxLagMs: number; cpuSeconds: number };
  const expected: Record<string, number> = {};
  ready.apps.forEach((a, i) => (expected[`${a.project}/${a.domain}/${a.app}`] = driven.perApp[i]!));
  const rep = (await load.send({ report: { expected } })).report as Record<string, unknown> & { received: number; lost: number; latencyMs: Record<string, number>; cpuSeconds: number; expected: number };
  const wall = (performance.now() - w0) / 1000;
  const cpu = cpuSeconds() - cpu0;
  const busy = machineBusySeconds() - busy0;
  const lagMs = lag.stop();
  await prof?.stop();
  const m1 = service.api.metrics.render(service.apps);
  const delta = (name: string) => metricValue(m1, name) - metricValue(m0, name);
  const step: Step = {
    subscribers: open,
    ...common(rep, driven, wall, loadCpu0),
    watchP50: pct(probe, 50),
    watchP99: pct(probe, 99),
    watchSamples: probe.length,
    loopLagP99Ms: pct(lagMs, 99),
    loopLagMaxMs: Math.max(0, ...lagMs),
    serverCpuSeconds: cpu,
    serverCpuCores: cpu / wall,
    serverRssBytes: rssBytes(),
    apiserverCpuCores: driven.cpuSeconds / driven.seconds,
    // Everything else on the machine (other users of the 2 cores) over drive + drain; approximate.
    otherCpuCores: Math.max(0, busy - cpu - (rep.cpuSeconds - loadCpu0) - driven.cpuSeconds) / wall,
    serverDelivered: delta("appwatch_events_delivered_total"),
    serverCoalesced: delta("appwatch_events_coalesced_total"),
    serverDropped: delta("appwatch_events_dropped_total"),
    backpressureWaits: delta("appwatch_backpressure_waits_total"),
    ...(bare ? { order, otherContenderSubscribers: bareOpen } : {}),
  };
  console.error(
    `  ${String(open).padStart(6)} subs: ${Math.round(step.deliveredPerSec as number)} events/s delivered, p50 ${step.p50} ms, p99 ${step.p99} ms, max ${step.maxMs} ms, ` +
      `watch path p50 ${step.watchP50} p99 ${step.watchP99} ms, loop lag p99 ${Math.round(step.loopLagP99Ms as number)} max ${Math.round(step.loopLagMaxMs as number)} ms, lost ${step.lost}/${step.expected} (coalesced ${step.serverCoalesced}), server CPU ${(step.serverCpuCores as number).toFixed(2)} cores, load ${(step.loadCpuCores as number).toFixed(2)}, apiserver ${(step.apiserverCpuCores as number).toFixed(2)}, other ${(step.otherCpuCores as number).toFixed(2)}`,
  );
  return step;
}

/** The same step against the bare server: same subscribers (group `bare`), same rate, same report; CPU/RSS from /proc/<pid>. */
async function bareStep(n: number, order: number): Promise<Step> {
  const b = bare!;
  if (n > bareOpen) {
    if (n + open > FD_BUDGET) open = ((await load.send({ close: { keep: 0 } })).closed as { open: number }).open;
    const opened = (await load.send({ open: { url: b.url, group: "bare", subs: subscribers(bareOpen, n, ready.apps) } })).opened as { n: number };
    bareOpen = opened.n;
  }
  await new Promise((r) => setTimeout(r, 500));
  await load.send({ reset: { group: "bare" } });
  const loadCpu0 = (await load.send({ cpu: {} })).cpu as number;
  const api0 = (await api.send({ cpu: {} })).cpu as number;
  const busy0 = machineBusySeconds();
  const self0 = cpuSeconds();
  const cpu0 = b.cpuSeconds();
  const w0 = performance.now();
  const driven = (await b.send({ drive: { rate: RATE, seconds: SECONDS } })).driven as { writes: number; perApp: number[]; seconds: number; maxLagMs: number; cpuSeconds: number };
  const expected: Record<string, number> = {};
  ready.apps.forEach((a, i) => (expected[`${a.project}/${a.domain}/${a.app}`] = driven.perApp[i]!));
  const rep = (await load.send({ report: { expected, group: "bare" } })).report as Record<string, unknown> & { received: number; lost: number; latencyMs: Record<string, number>; cpuSeconds: number; expected: number };
  const wall = (performance.now() - w0) / 1000;
  const cpu = b.cpuSeconds() - cpu0;
  const self = cpuSeconds() - self0;
  const busy = machineBusySeconds() - busy0;
  const apiCpu = ((await api.send({ cpu: {} })).cpu as number) - api0;
  const step: Step = {
    subscribers: bareOpen,
    ...common(rep, driven, wall, loadCpu0),
    serverCpuSeconds: cpu,
    serverCpuCores: cpu / wall,
    serverRssBytes: b.rssBytes(),
    apiserverCpuCores: apiCpu / wall,
    // The idle appwatch process (this driver: heartbeats to its open subscribers) is counted here.
    idleAppwatchCpuCores: self / wall,
    otherCpuCores: Math.max(0, busy - cpu - self - apiCpu - (rep.cpuSeconds - loadCpu0)) / wall,
    order,
    otherContenderSubscribers: open,
  };
  console.error(
    `  ${String(bareOpen).padStart(6)} subs (bare): ${Math.round(step.deliveredPerSec as number)} events/s delivered, p50 ${step.p50} ms, p99 ${step.p99} ms, max ${step.maxMs} ms, ` +
      `lost ${step.lost}/${step.expected}, server CPU ${(step.serverCpuCores as number).toFixed(2)} cores, load ${(step.loadCpuCores as number).toFixed(2)}, idle appwatch ${(step.idleAppwatchCpuCores as number).toFixed(2)}, other ${(step.otherCpuCores as number).toFixed(2)}`,
  );
  return step;
}

const over = (s: Step) => s.p99 > P99_GOAL_MS || s.lost > 0;
for (const [k, n] of STEPS.entries()) {
  // Alternating who goes first cancels a drift of the machine within a step pair.
  const order: ("appwatch" | "bare")[] = !bare ? ["appwatch"] : k % 2 === 0 ? ["appwatch", "bare"] : ["bare", "appwatch"];
  for (const [i, who] of order.entries()) {
    if (who === "appwatch" && knee === undefined) {
      const s = await appwatchStep(n, i);
      steps.push(s);
      if (over(s)) {
        knee = open;
        // Done with appwatch: its sockets (and their heartbeats) would only weigh on the bare steps.
        if (bare) open = ((await load.send({ close: { keep: 0 } })).closed as { open: number }).open;
      }
    } else if (who === "bare" && bareKnee === undefined) {
      const s = await bareStep(n, i);
      bareSteps.push(s);
      if (over(s)) {
        bareKnee = bareOpen;
        bareOpen = ((await load.send({ close: { keep: 0, group: "bare" } })).closed as { open: number }).open;
      }
    }
  }
  if (knee !== undefined && (!bare || bareKnee !== undefined)) break;
}

load.proc.stdin!.write(JSON.stringify({ exit: {} }) + "\n"); // answered by exiting, not by a line
load.proc.kill();
bare?.stop();
const maxOf = (xs: Step[]) => xs.reduce((m, s) => Math.max(m, s.subscribers), 0);
const result = {
  benchmark: "B3 fan-out",
  runtime: RUNTIME,
  runtimeVersion: runtimeVersion(),
  loadRuntime: "Node (ws)",
  date: new Date().toISOString(),
  machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model ?? "?", memoryGiB: Math.round(os.totalmem() / 2 ** 30), platform: `${os.platform()} ${os.release()} ${os.arch()}` },
  apps: APPS,
  rate: RATE,
  seconds: SECONDS,
  mix: { all: ALL_SUBS, project: "every 20th (5 %)", app: "the rest" },
  gcAvailable,
  rss0Bytes: rss0,
  mem0,
  idle,
  steps,
  knee: knee ?? null,
  maxTested: bare ? maxOf(steps) : open,
  ...(bare && bareMem0
    ? {
      bare: {
        server: `bench/fanout/bare-${RUNTIME}.ts`,
        version: bare.version,
        gcAvailable: bareMem0.gc,
        rss0Bytes: bareMem0.rss,
        mem0: { heapUsed: bareMem0.heapUsed, heapTotal: bareMem0.heapTotal, external: bareMem0.external, arrayBuffers: bareMem0.arrayBuffers },
        idle: bareIdle,
        steps: bareSteps,
        knee: bareKnee ?? null,
        maxTested: maxOf(bareSteps),
      },
    }
    : {}),
  warnings: logs.slice(0, 10),
  totalSeconds: (performance.now() - t0) / 1000,
};
mkdirSync(dirname(RESULT_FILE), { recursive: true });
writeFileSync(RESULT_FILE, JSON.stringify(result, null, 2) + "\n");
writeB3(join(ROOT, "bench", "results"));
console.error(`  knee: ${knee ?? `not reached (≤ ${result.maxTested})`}${bare ? `; bare knee: ${bareKnee ?? `not reached (≤ ${maxOf(bareSteps)})`}` : ""}; total ${result.totalSeconds.toFixed(0)} s; wrote ${RESULT_FILE} and bench/results/B3.md`);
api.proc.stdin!.write(JSON.stringify({ exit: {} }) + "\n");
await service.stop();
setTimeout(() => api.proc.kill(), 2000).unref?.();
process.exit(0);
