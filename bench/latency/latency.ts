/**
 * B6 latency: from the API server's write to the client's receive, for appwatch's WebSocket, SSE
 * and Connect Watch on Node, Deno and Bun, each as a ratio to a minimal relay (client-node
 * informer → broadcast), with 1,000 subscribers at 100 and 1,000 changes/s, against two sources:
 *
 * - `sandbox`: the repo's Kubernetes-API-compatible sandbox over HTTP on loopback
 *   (`bench/lib/apiserver.ts`, seeded with BENCH_APPS = 1,000 ~5 KB app KServices); the write
 *   time is taken in that process right at its store write.
 * - `real`: a real kube-apiserver + etcd (`tests/cluster/cluster.ts`, the binaries of
 *   `npm run test:cluster`, watch cache on as in production), the same 1,000 KServices created
 *   in namespace `bench`; this process is the writer (merge-PATCHes of `/status`, up to
 *   BENCH_IN_FLIGHT = 64 in flight) and the write time is taken right before each request is
 *   handed to the HTTP client (the request's send; the response's arrival is recorded as the
 *   writer's own latency).
 *
 * Each write sets the KService's Ready condition message to `bench t=<µs> s=<seq>` (µs since the
 * epoch, `performance.timeOrigin + performance.now()`, the clock of every process here), which
 * appwatch carries into the App's `status.conditions[].message` and the relay carries as-is. The
 * load process (`bench/lib/load.ts`, Node) receives with the same clock and takes every
 * delivered event's latency; it also counts every subscriber's events against the writes per app
 * (loss). Subscribers: the B3 mix (4 all-apps, every 20th per project+domain, the rest per app).
 *
 * Contenders, one process at a time (the source is watched by no one else while it is measured):
 * appwatch (`bench/latency/appwatch.ts`, `startService`, serving `/v1/watch` WebSocket + SSE and
 * Connect `AppService/Watch` at once) and the relay (`bench/latency/relay.ts`: WebSocket and SSE),
 * both on the runtime under test. The two alternate: appwatch first for even (source, runtime)
 * blocks, the relay first for odd ones; with `--reps 2` every block runs twice, flipped.
 *
 *   node --import tsx bench/latency/latency.ts [--quick] [--sources sandbox,real] [--runtimes node,deno,bun]
 *       [--rates 100,1000] [--subs 1000] [--seconds 6] [--transports ws,sse,connect] [--reps 1]
 *   npm run bench:latency -- --quick
 *
 * Writes bench/results/latency.json (every cell) and bench/results/B6.md (report.ts).
 * @module
 */
import process from "node:process";
import os from "node:os";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runtimeCommand } from "../lib/common.ts";
import { jsonLines } from "../lib/json-lines.ts";
import { type AppRef, distinctApps, subscribers } from "../lib/fixtures.ts";
import { writeB6 } from "./report.ts";
import type { KubeObject } from "../../src/watch/types.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const HELP = `B6 latency (write → receive), appwatch vs a minimal client-node relay.
  node --import tsx bench/latency/latency.ts [options]
  --quick              smoke run: sandbox, Node, 100 subscribers, 2 s per cell
  --sources LIST       sandbox,real (default both)
  --runtimes LIST      node,deno,bun (default all)
  --rates LIST         changes/s (default 100,1000)
  --subs N             subscribers per contender (default 1000)
  --seconds S          drive length per cell (default 6)
  --warmup S           per contender process and transport, a discarded cell of S seconds at the highest
                       rate before the measured ones, so no cell pays for JIT and first-use allocation
                       (default 3; 0: none)
  --transports LIST    ws,sse,connect (default all; the relay has no Connect: its WS is the peer)
  --reps N             repeat every (source, runtime) block, contender order flipped (default 1)
  --apps N             app KServices in the source (default 1000)
  --out FILE           results JSON (default bench/results/latency.json; --quick: a temp file; B6.md only for the default)`;

const argv = process.argv.slice(2);
if (argv.includes("--help") || argv.includes("-h")) {
  console.log(HELP);
  process.exit(0);
}
const opt = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const QUICK = argv.includes("--quick");
const listOpt = (name: string, d: string) => (opt(name) ?? d).split(",").map((s) => s.trim()).filter(Boolean);
const SOURCES = listOpt("sources", QUICK ? "sandbox" : "sandbox,real") as ("sandbox" | "real")[];
const RUNTIMES = listOpt("runtimes", QUICK ? "node" : "node,deno,bun") as ("node" | "deno" | "bun")[];
const RATES = listOpt("rates", "100,1000").map(Number);
const SUBS = Number(opt("subs") ?? (QUICK ? 100 : 1000));
const SECONDS = Number(opt("seconds") ?? (QUICK ? 2 : 6));
const WARMUP = Number(opt("warmup") ?? (QUICK ? 1 : 3));
const TRANSPORTS = listOpt("transports", "ws,sse,connect") as ("ws" | "sse" | "connect")[];
const REPS = Number(opt("reps") ?? 1);
const APPS = Number(opt("apps") ?? 1000);
const OUT = opt("out") ?? (QUICK ? join(os.tmpdir(), "appwatch-b6-quick.json") : join(ROOT, "bench", "results", "latency.json"));
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 64);
const NS = "bench";

// ------------------------------------------------------------------ process stats

function cpuOf(pid: number | "self"): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

/** Busy CPU seconds of the whole machine (Linux /proc/stat). */
function machineBusySeconds(): number {
  const f = (readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  return ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)) / 100;
}

const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]! : NaN;
};

// ------------------------------------------------------------------ child processes (JSON lines)

interface Child {
  proc: ChildProcess;
  next(): Promise<Record<string, unknown>>;
  send(cmd: unknown): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** BENCH_B6_CPU_PROF_DIR: a V8 CPU profile of every contender process on Node and Deno (`--cpu-prof`, written at its exit); with BENCH_B6_PROF_SOURCE=1 also of the sandbox source. */
const PROF_DIR = process.env.BENCH_B6_CPU_PROF_DIR;
/** BENCH_B6_NODE_FLAGS: more V8/Node flags for every Node contender, space-separated (e.g. `--trace-gc`, to its stderr). */
const NODE_FLAGS = process.env.BENCH_B6_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [];

function command(runtime: "node" | "deno" | "bun", script: string, args: string[]): [string, string[]] {
  // --cpu-prof where the runtime takes it (Node, Deno); Bun runs unprofiled.
  const profiled = script.startsWith("bench/latency/") || (process.env.BENCH_B6_PROF_SOURCE === "1" && script === "bench/lib/apiserver.ts");
  const prof = PROF_DIR && profiled && runtime !== "bun" ? ["--cpu-prof", `--cpu-prof-dir=${PROF_DIR}`] : [];
  if (runtime === "node" && script.startsWith("bench/latency/")) prof.push(...NODE_FLAGS);
  return runtimeCommand(runtime, script, args, prof, script === "bench/latency/appwatch.ts");
}

function child(runtime: "node" | "deno" | "bun", script: string, args: string[] = [], env: Record<string, string> = {}): Child {
  const [cmd, a] = command(runtime, script, args);
  const proc = spawn(cmd, a, { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, ...env } });
  const { next, send } = jsonLines(proc);
  let stopping = false;
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  proc.once("exit", (code, signal) => {
    if (!stopping) {
      console.error(`BENCHMARK FAILED: ${runtime} ${script} exited (code ${code}, signal ${signal})`);
      process.exit(1);
    }
  });
  return {
    proc,
    next,
    send,
    async stop() {
      stopping = true;
      proc.stdin!.end();
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 4000);
      await exited;
      clearTimeout(t);
    },
  };
}

// ------------------------------------------------------------------ sources

interface Driven {
  writes: number;
  perApp: number[];
  seconds: number;
  maxLagMs: number;
  cpuSeconds: number;
  failed?: number;
  writeMs?: { p50: number; p99: number };
}

interface Source {
  name: "sandbox" | "real";
  description: string;
  kubeconfig: string;
  apps: AppRef[];
  /** Writes `rate`/s for `seconds`, round-robin over the apps, each stamped at its write. */
  drive(rate: number, seconds: number): Promise<Driven>;
  /** Extra environment for the contenders (Bun: the real apiserver's CA, which client-node 2.0.1 on Bun does not take from the kubeconfig). */
  env?: Record<string, string>;
  /** The real apiserver: writes/s it took in a calibration drive at 1,000/s with nobody watching. */
  capacity?: number;
  /** CPU seconds of the source's processes (the sandbox process; kube-apiserver + etcd). */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

function kubeconfigFor(url: string): string {
  const file = join(os.tmpdir(), `appwatch-b6-${process.pid}.yaml`);
  writeFileSync(
    file,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n    server: ${url}\nusers:\n- name: bench\n  user: {}\ncontexts:\n- name: bench\n  context:\n    cluster: bench\n    user: bench\n    namespace: ${NS}\ncurrent-context: bench\n`,
  );
  return file;
}

async function sandboxSource(): Promise<Source> {
  const api = child("node", "bench/lib/apiserver.ts", [], { BENCH_APPS: String(APPS), BENCH_STAMP_US: "1" });
  const ready = (await api.next()).ready as { url: string; apps: AppRef[] };
  const kubeconfig = kubeconfigFor(ready.url);
  return {
    name: "sandbox",
    description: `the sandbox (src/sandbox) over HTTP on loopback, ${APPS} apps; write time at its store write`,
    kubeconfig,
    apps: ready.apps,
    drive: async (rate, seconds) => (await api.send({ drive: { rate, seconds } })).driven as unknown as Driven,
    cpuSeconds: () => cpuOf(api.proc.pid!),
    stop: async () => {
      rmSync(kubeconfig, { force: true });
      await api.stop();
    },
  };
}

async function realSource(): Promise<Source> {
  const { startRealCluster, realClusterAvailable, KUBE_VERSION, ETCD_VERSION } = await import("../../tests/cluster/cluster.ts");
  const available = realClusterAvailable();
  if (!available.ok) throw new Error(`real cluster not available: ${available.reason}`);
  const t = performance.now();
  const cluster = await startRealCluster({});
  const ns = await cluster.request("POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
  if (ns.status !== 201) throw new Error(`namespace: HTTP ${ns.status}`);
  const KSVC = `/apis/serving.knative.dev/v1/namespaces/${NS}/services`;
  const objects = distinctApps(APPS);
  const conditions: Record<string, unknown>[][] = [];
  // Create them (status is a subresource: set it with a second write), 16 at a time.
  for (let i = 0; i < objects.length; i += 16) {
    await Promise.all(objects.slice(i, i + 16).map(async (obj, k) => {
      const { status, ...rest } = obj;
      const { resourceVersion: _rv, uid: _uid, generation: _gen, creationTimestamp: _ct, ...metadata } = rest.metadata as Record<string, unknown>;
      const created = await cluster.request("POST", KSVC, { ...rest, metadata: { ...metadata, namespace: NS } });
      if (created.status !== 201) throw new Error(`create ${obj.metadata.name}: HTTP ${created.status} ${JSON.stringify(created.body).slice(0, 300)}`);
      const st = await cluster.request("PATCH", `${KSVC}/${obj.metadata.name}/status`, { status }, { contentType: "application/merge-patch+json" });
      if (st.status !== 200) throw new Error(`status ${obj.metadata.name}: HTTP ${st.status}`);
      conditions[i + k] = ((status as Record<string, unknown>).conditions ?? []) as Record<string, unknown>[];
    }));
  }
  const apps = objects.map((o) => {
    const [project, domain, app] = (o.metadata.annotations!["flyte.org/app-id"] as string).split("/");
    return { name: o.metadata.name!, project: project!, domain: domain!, app: app! };
  });
  const kubeconfig = join(cluster.dir, "kubeconfig-bench");
  writeFileSync(kubeconfig, readFileSync(cluster.kubeconfigPath, "utf8").replace("namespace: default", `namespace: ${NS}`), { mode: 0o600 });
  console.error(`  real kube-apiserver ${KUBE_VERSION} + etcd ${ETCD_VERSION} at ${cluster.url}: ${apps.length} KServices created in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  const caFile = join(cluster.dir, "bench-ca.pem");
  writeFileSync(caFile, cluster.caPem);
  const pids = () => readFileSync(join(cluster.dir, "pids"), "utf8").split("\n").filter(Boolean).map(Number);
  let seq = 0;
  let next = 0;
  const body = (i: number, t: number, s: number) =>
    JSON.stringify({
      status: {
        conditions: conditions[i]!.map((c) => c.type === "Ready" ? { lastTransitionTime: c.lastTransitionTime, message: `bench t=${t} s=${s}`, status: "True", type: "Ready" } : c),
      },
    });
  const drive = async (rate: number, seconds: number): Promise<Driven> => {
    const perApp = new Array<number>(apps.length).fill(0);
    const total = Math.round(rate * seconds);
    const cpu0 = cpuOf("self");
    const start = performance.now();
    let issued = 0;
    let failed = 0;
    let inFlight = 0;
    let maxLag = 0;
    const writeMs: number[] = [];
    const pending = new Set<Promise<void>>();
    const one = async (i: number) => {
      const s = ++seq;
      const sent = performance.now();
      try {
        const res = await cluster.fetch(`${KSVC}/${apps[i]!.name}/status`, {
          method: "PATCH",
          headers: { "content-type": "application/merge-patch+json", accept: "application/json" },
          body: body(i, nowUs(), s),
        });
        await res.arrayBuffer();
        if (res.status === 200) perApp[i]!++;
        else failed++;
      } catch {
        failed++;
      }
      writeMs.push(performance.now() - sent);
    };
    while (issued < total) {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate));
      if (due - issued > 0) maxLag = Math.max(maxLag, ((due - issued) / rate) * 1000);
      while (issued < due && inFlight < IN_FLIGHT) {
        const i = next;
        next = (next + 1) % apps.length;
        issued++;
        inFlight++;
        const p = one(i).finally(() => {
          inFlight--;
          pending.delete(p);
        });
        pending.add(p);
      }
      await sleep(1);
    }
    await Promise.all(pending);
    const elapsed = (performance.now() - start) / 1000;
    const writes = perApp.reduce((a, b) => a + b, 0);
    return { writes, perApp, seconds: elapsed, maxLagMs: maxLag, cpuSeconds: cpuOf("self") - cpu0, failed, writeMs: { p50: pct(writeMs, 50), p99: pct(writeMs, 99) } };
  };
  // Calibration (and warm-up): what this apiserver takes at 1,000 writes/s with nobody watching.
  const cal = await drive(1000, 4);
  const capacity = cal.writes / cal.seconds;
  console.error(`  real apiserver calibration: ${Math.round(capacity)} writes/s sustained at a 1,000/s target (write RTT p50 ${cal.writeMs?.p50.toFixed(1)} ms, p99 ${cal.writeMs?.p99.toFixed(1)} ms, ${cal.failed} failed)`);
  return {
    name: "real",
    capacity,
    env: { NODE_EXTRA_CA_CERTS: caFile },
    description: `real kube-apiserver ${KUBE_VERSION} + etcd ${ETCD_VERSION} on loopback (watch cache on), ${APPS} KServices; write time at the PATCH's send (≤ ${IN_FLIGHT} in flight)`,
    kubeconfig,
    apps,
    drive,
    cpuSeconds: () => pids().reduce((s, p) => s + cpuOf(p), 0),
    stop: () => cluster.stop(),
  };
}

// ------------------------------------------------------------------ one cell

interface Cell {
  source: string;
  runtime: string;
  contender: "appwatch" | "relay";
  transport: "ws" | "sse" | "connect";
  rate: number;
  rep: number;
  order: number;
  subscribers: number;
  failedToOpen: number;
  writes: number;
  writesFailed: number;
  achievedRate: number;
  writerMaxLagMs: number;
  writeMs?: { p50: number; p99: number };
  expected: number;
  received: number;
  lost: number;
  extra: number;
  outOfOrder: number;
  closedUnexpectedly: number;
  samples: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  maxMs: number;
  /** appwatch only: the watch path alone (write → AppK8sClient publish), from an in-process probe subscription. */
  watchP50?: number;
  watchP99?: number;
  watchSamples?: number;
  /** appwatch only: the event loop's delay p99 and max (ms), and GC pauses, during the cell (null where the runtime has no node:perf_hooks histogram or GC entries). */
  loopP99?: number | null;
  loopMax?: number | null;
  gcCount?: number;
  gcMs?: number;
  gcMax?: number | null;
  /** The longest gap between the server's 5 ms ticks, and the CPU its process used in that gap. */
  stallMs?: number | null;
  stallCpuMs?: number | null;
  /** With BENCH_READ_PROBE=1: write → the event's chunk at appwatch's watch reader (upstream of appwatch). */
  readP50?: number | null;
  readP99?: number | null;
  readChunks?: number;
  eventsPerChunkP99?: number | null;
  eventsPerChunkMax?: number | null;
  contenderCpuCores: number;
  loadCpuCores: number;
  sourceCpuCores: number;
  driverCpuCores: number;
  otherCpuCores: number;
  loadavg1Before: number;
}

const load = child("node", "bench/lib/load.ts");
let group = 0;

async function cell(src: Source, runtime: string, contender: "appwatch" | "relay", proc: Child, pid: number, url: string, transport: "ws" | "sse" | "connect", rate: number, rep: number, order: number, warmup?: number): Promise<Cell> {
  const seconds = warmup ?? SECONDS;
  const g = `g${group++}`;
  const base = transport === "ws" ? url.replace(/^http/, "ws") : url;
  const loadavg1Before = os.loadavg()[0]!;
  const opened = (await load.send({ open: { url: base, group: g, transport, subs: subscribers(0, SUBS, src.apps) } })).opened as { n: number; failed: number };
  if (opened.failed) console.error(`  ${opened.failed} subscribers failed to open`);
  await sleep(300);
  await load.send({ quiet: { ms: 500 } }); // Connect Watch sends a snapshot first
  await load.send({ reset: { group: g } });
  if (contender === "appwatch") await proc.send({ probe: {} });
  const load0 = (await load.send({ cpu: {} })).cpu as number;
  const c0 = cpuOf(pid);
  const s0 = src.cpuSeconds();
  const d0 = cpuOf("self");
  const busy0 = machineBusySeconds();
  const w0 = performance.now();
  const driven = await src.drive(rate, seconds);
  const expected: Record<string, number> = {};
  src.apps.forEach((a, i) => (expected[`${a.project}/${a.domain}/${a.app}`] = driven.perApp[i]!));
  const rep0 = (await load.send({ report: { expected, group: g } })).report as { expected: number; received: number; lost: number; extra: number; outOfOrder: number; closedUnexpectedly: number; cpuSeconds: number; latencyMs: Record<string, number> };
  const wall = (performance.now() - w0) / 1000;
  const contenderCpu = cpuOf(pid) - c0;
  const loadCpu = rep0.cpuSeconds - load0;
  const sourceCpu = src.cpuSeconds() - s0;
  const driverCpu = cpuOf("self") - d0;
  const busy = machineBusySeconds() - busy0;
  const probe = contender === "appwatch" ? (await proc.send({ probe: {} })).probe as { n: number; p50: number | null; p99: number | null; loopP99?: number | null; loopMax?: number | null; gcCount?: number; gcMs?: number; gcMax?: number | null; stallMs?: number; stallCpuMs?: number; readP50?: number | null; readP99?: number | null; readChunks?: number; eventsPerChunkP99?: number | null; eventsPerChunkMax?: number | null } : undefined;
  await load.send({ close: { keep: 0, group: g } });
  const c: Cell = {
    source: src.name,
    runtime,
    contender,
    transport,
    rate,
    rep,
    order,
    subscribers: opened.n,
    failedToOpen: opened.failed,
    writes: driven.writes,
    writesFailed: driven.failed ?? 0,
    achievedRate: driven.writes / driven.seconds,
    writerMaxLagMs: driven.maxLagMs,
    ...(driven.writeMs ? { writeMs: driven.writeMs } : {}),
    expected: rep0.expected,
    received: rep0.received,
    lost: rep0.lost,
    extra: rep0.extra,
    outOfOrder: rep0.outOfOrder,
    closedUnexpectedly: rep0.closedUnexpectedly,
    samples: rep0.latencyMs.samples ?? 0,
    p50: rep0.latencyMs.p50 ?? NaN,
    p90: rep0.latencyMs.p90 ?? NaN,
    p99: rep0.latencyMs.p99 ?? NaN,
    p999: rep0.latencyMs.p999 ?? NaN,
    maxMs: rep0.latencyMs.max ?? NaN,
    ...(probe ? { watchP50: probe.p50 ?? NaN, watchP99: probe.p99 ?? NaN, watchSamples: probe.n, loopP99: probe.loopP99 ?? null, loopMax: probe.loopMax ?? null, gcCount: probe.gcCount ?? 0, gcMs: probe.gcMs ?? 0, gcMax: probe.gcMax ?? null, stallMs: probe.stallMs ?? null, stallCpuMs: probe.stallCpuMs ?? null, ...(probe.readP99 !== undefined ? { readP50: probe.readP50 ?? null, readP99: probe.readP99 ?? null, readChunks: probe.readChunks ?? 0, eventsPerChunkP99: probe.eventsPerChunkP99 ?? null, eventsPerChunkMax: probe.eventsPerChunkMax ?? null } : {}) } : {}),
    contenderCpuCores: contenderCpu / wall,
    loadCpuCores: loadCpu / wall,
    sourceCpuCores: sourceCpu / wall,
    driverCpuCores: driverCpu / wall,
    otherCpuCores: Math.max(0, busy - contenderCpu - loadCpu - sourceCpu - driverCpu) / wall,
    loadavg1Before,
  };
  console.error(
    `  ${warmup === undefined ? "" : "(warm-up, discarded) "}${src.name} ${runtime} ${contender.padEnd(8)} ${transport.padEnd(7)} ${String(rate).padStart(4)}/s: p50 ${c.p50.toFixed(2)} ms, p99 ${c.p99.toFixed(2)} ms, max ${c.maxMs.toFixed(1)} ms${c.watchP50 !== undefined ? ` (watch path p50 ${c.watchP50.toFixed(2)} p99 ${c.watchP99!.toFixed(2)} ms; loop max ${c.loopMax?.toFixed(1) ?? "–"} ms; GC ${c.gcCount} × ${c.gcMs?.toFixed(0)} ms, max ${c.gcMax?.toFixed(1) ?? "–"}; longest tick gap ${c.stallMs?.toFixed(0) ?? "–"} ms with ${c.stallCpuMs?.toFixed(0) ?? "–"} ms CPU${c.readP99 != null ? `; read p50 ${c.readP50?.toFixed(2)} p99 ${c.readP99.toFixed(2)} ms in ${c.readChunks} chunks, events per chunk p99 ${c.eventsPerChunkP99} max ${c.eventsPerChunkMax}` : ""})` : ""}; ` +
      `${c.received}/${c.expected} received (lost ${c.lost}), ${Math.round(c.achievedRate)} writes/s${c.writesFailed ? ` (${c.writesFailed} failed)` : ""}; CPU contender ${c.contenderCpuCores.toFixed(2)}, load ${c.loadCpuCores.toFixed(2)}, source ${c.sourceCpuCores.toFixed(2)}, driver ${c.driverCpuCores.toFixed(2)}, other ${c.otherCpuCores.toFixed(2)} cores`,
  );
  return c;
}

// ------------------------------------------------------------------ main

const t0 = performance.now();
const startedAt = new Date().toISOString();
const loadavgAtStart = os.loadavg();
console.error(`B6 latency: sources ${SOURCES.join(",")}; runtimes ${RUNTIMES.join(",")}; ${RATES.join(",")} changes/s; ${SUBS} subscribers; ${SECONDS} s per cell after a ${WARMUP} s warm-up; load average ${loadavgAtStart.map((x) => x.toFixed(2)).join(" ")}`);
const cells: Cell[] = [];
const versions: Record<string, { appwatch?: string; relay?: string; peer?: string }> = {};
const sources: Record<string, string> = {};
/** The rates measured per source: the real apiserver's are capped at 70 % of its calibrated capacity. */
const sourceRates: Record<string, number[]> = {};
const capacities: Record<string, number> = {};
let block = 0;
for (const srcName of SOURCES) {
  const src = srcName === "sandbox" ? await sandboxSource() : await realSource();
  sources[src.name] = src.description;
  let rates = RATES;
  if (src.capacity !== undefined) {
    capacities[src.name] = src.capacity;
    const cap = Math.max(10, Math.floor((0.7 * src.capacity) / 10) * 10);
    rates = [...new Set(RATES.map((r) => Math.min(r, cap)))];
    if (rates.some((r, i) => r !== RATES[i])) {
      sources[src.name] += `; it sustained ${Math.round(src.capacity)} writes/s in a 4 s calibration drive at a 1,000/s target (nobody watching), so its high rate is ${cap}/s (70 % of that) instead of ${Math.max(...RATES)}/s`;
      console.error(`  real apiserver: measuring at ${rates.join(", ")} changes/s`);
    }
  }
  sourceRates[src.name] = rates;
  for (let rep = 0; rep < REPS; rep++) {
    for (const runtime of RUNTIMES) {
      const order: ("appwatch" | "relay")[] = block++ % 2 === 0 ? ["appwatch", "relay"] : ["relay", "appwatch"];
      for (const [k, contender] of order.entries()) {
        const script = contender === "appwatch" ? "bench/latency/appwatch.ts" : "bench/latency/relay.ts";
        const proc = child(runtime, script, [src.kubeconfig, NS], src.env);
        const ready = (await proc.next()).ready as { url: string; pid: number; version: string; peer?: string; apps: number };
        (versions[runtime] ??= {})[contender] = ready.version;
        if (ready.peer) versions[runtime]!.peer = ready.peer;
        if (ready.apps !== src.apps.length) console.error(`  ${contender} on ${runtime} synced ${ready.apps} apps, the source has ${src.apps.length}`);
        await sleep(500);
        const transports = TRANSPORTS.filter((t) => contender === "appwatch" || t !== "connect");
        // A fresh process JITs and allocates each transport's first-use structures in that transport's
        // first cell: warm every transport it will be measured on up off the books.
        if (WARMUP > 0) for (const t of transports) await cell(src, runtime, contender, proc, ready.pid, ready.url, t, Math.max(...rates), rep, k, WARMUP);
        for (const transport of transports) {
          for (const rate of rates) cells.push(await cell(src, runtime, contender, proc, ready.pid, ready.url, transport, rate, rep, k));
        }
        await proc.stop();
      }
    }
  }
  await src.stop();
}
load.proc.stdin!.write(JSON.stringify({ exit: {} }) + "\n");
load.proc.kill();

const result = {
  benchmark: "B6 latency (API server write → client receive)",
  date: startedAt,
  machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model ?? "?", memoryGiB: Math.round(os.totalmem() / 2 ** 30), platform: `${os.platform()} ${os.release()} ${os.arch()}` },
  loadavgAtStart,
  loadavgAtEnd: os.loadavg(),
  options: { sources: SOURCES, runtimes: RUNTIMES, rates: RATES, subscribers: SUBS, seconds: SECONDS, warmupSeconds: WARMUP, transports: TRANSPORTS, reps: REPS, apps: APPS, inFlight: IN_FLIGHT, quick: QUICK },
  mix: { all: 4, project: "every 20th (5 %)", app: "the rest" },
  loadRuntime: `Node ${process.versions.node} (ws; node:http for SSE and Connect)`,
  sources,
  sourceRates,
  capacities,
  versions,
  cells,
  totalSeconds: (performance.now() - t0) / 1000,
};
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, JSON.stringify(result, null, 2) + "\n");
// B6.md is the full run's: only a run that wrote the default results file re-renders it.
const render = OUT === join(ROOT, "bench", "results", "latency.json");
if (render) writeB6(join(ROOT, "bench", "results"), OUT);
console.error(`  total ${result.totalSeconds.toFixed(0)} s; wrote ${OUT}${render ? " and bench/results/B6.md" : ""}`);
process.exit(0);
