/**
 * B5 soak: one `AppK8sClient` (Reflector + conversion + journal + one
 * all-apps subscriber draining its events) against the sandbox in a separate
 * Node process (`bench/soak/server.ts`), in two phases:
 *
 * 1. **relist cycles** (SOAK_CYCLES, default 1,000): a change the watch delivers
 *    (plus Revision churn for the client's Revision watch: a scale, a Revision
 *    created and one deleted), then a write the KService watch does not see (a
 *    Revision) + compaction + every watch closed, so the client's re-watches from
 *    their last RVs get 410 Expired and both watches relist; the cycle ends when
 *    the client reports the KService relist done and is healthy.
 * 2. **steady state** (SOAK_STEADY_S, default 100 s): the sandbox's demo activity
 *    (creates, deletes, rollouts, stop/start, failures, scaling) at one change
 *    every SOAK_INTERVAL_MS (default 4 ms), compressed.
 *
 * Every SOAK_SAMPLE_S seconds (and after every 100 cycles) a full GC is forced
 * and RSS (/proc/self/status), JS heap, open file descriptors and sockets
 * (/proc/self/fd) and active handles (`process.getActiveResourcesInfo()`) are
 * sampled. Prints a summary and writes `bench/results/soak-<runtime>.json`.
 *
 * Run: `node --import tsx --expose-gc bench/soak/soak.ts`,
 * `npx deno run -A --v8-flags=--expose-gc bench/soak/soak.ts`, `npx bun bench/soak/soak.ts`.
 * @module
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import os from "node:os";
import process from "node:process";
import { dirname, join } from "node:path";
import { AppK8sClient } from "../../src/flyte/app-client.ts";
import { createKubeClient } from "../../src/kube/connect.ts";
import { activeResources, fullGc, installTimerCounter, heapUsed, mib, openFds, procMemory, REPO_ROOT, runtime, runtimeVersion, startNodeHelper } from "../lib/common.ts";

const CYCLES = Number(process.env.SOAK_CYCLES ?? 1000);
const STEADY_S = Number(process.env.SOAK_STEADY_S ?? 100);
const INTERVAL_MS = Number(process.env.SOAK_INTERVAL_MS ?? 4);
const SAMPLE_S = Number(process.env.SOAK_SAMPLE_S ?? 10);
const APPS = Number(process.env.SOAK_APPS ?? 50);
/** The resume journal's size (the product's default is 10,000): smaller so that it is full early in the steady state. */
const RESUME_WINDOW = Number(process.env.SOAK_RESUME_WINDOW ?? 2000);

interface Sample {
  phase: "start" | "cycles" | "after-cycles" | "steady" | "end";
  /** Seconds since the soak started. */
  t: number;
  cycles: number;
  rss: number;
  heap?: number;
  /** process.memoryUsage() after the GC: V8/JSC heap reserved, external (ArrayBuffers and other off-heap memory the engine knows of). */
  heapTotal?: number;
  external?: number;
  arrayBuffers?: number;
  fds: number;
  sockets: number;
  handles?: Record<string, number>;
  /** Live timers created through the global setTimeout/setInterval (counted by a wrapper, every runtime). */
  timers: { timeouts: number; intervals: number };
  apps: number;
  journal: number;
  events: number;
  relists: number;
  watches: number;
  serverWatches: number;
  /** The Revision watch: events the app client got from it, its list and watch requests so far, open revision watches (server side), Revisions on the server. */
  revisionEvents: number;
  revisionLists: number;
  revisionWatchRequests: number;
  serverRevisionWatches: number;
  serverRevisions: number;
}

const liveTimers = installTimerCounter();

async function main(): Promise<void> {
  const server = await startNodeHelper<{ url: string; apps: number; pid: number }>("bench/soak/server.ts", ["--apps", String(APPS)]);
  const url = server.meta.url;
  // Control calls on a fresh, closed-after-use connection, so they leave no socket behind in the counts.
  const ctl = (path: string, method = "POST") =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const req = request(`${url}${path}`, { method, agent: false, headers: { connection: "close" } }, (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (d: string) => (body += d)).on("end", () => {
          try {
            resolve(JSON.parse(body) as Record<string, unknown>);
          } catch (e) {
            reject(e);
          }
        });
      });
      req.on("error", reject);
      req.end();
    });
  const QUIET_MS = Number(process.env.SOAK_QUIET_MS ?? 6000); // > undici's and node:http's keep-alive timeouts (4 s / 5 s)
  const kube = await createKubeClient({ server: url, namespace: "flyte", tls: { insecureSkipVerify: false }, auth: { type: "none" }, source: "soak" });
  // Count the Revision watch's requests (lists and watches) as they pass through the client.
  const revisionRequests = { lists: 0, watches: 0 };
  const send = kube.request.bind(kube);
  kube.request = (opts) => {
    if (/\/revisions$/.test(opts.path)) {
      const w = opts.query?.watch;
      if (w === true || w === "true" || w === 1 || w === "1") revisionRequests.watches++;
      else revisionRequests.lists++;
    }
    return send(opts);
  };
  const client = new AppK8sClient({ client: kube, namespace: "flyte", watch: { initialList: "paginated" }, resumeWindow: RESUME_WINDOW });
  const stop = new AbortController();
  const t0 = performance.now();
  const samples: Sample[] = [];
  let cycles = 0;
  let received = 0;
  let apps = 0;
  let drain: Promise<void> | undefined;
  try {
    await client.startWatching(stop.signal);
    const sub = client.subscribe("", { snapshot: true });
    drain = (async () => {
      for await (const ev of sub) {
        received++;
        if ("createEvent" in ev) apps++;
        else if ("deleteEvent" in ev) apps--;
      }
    })();
    const metrics = () => client.watchMetrics()!;
    const sample = async (phase: Sample["phase"]) => {
      await new Promise((r) => setTimeout(r, 20));
      fullGc();
      const m = metrics();
      const fds = openFds();
      const stats = await ctl("/ctl/stats", "GET");
      const mu = process.memoryUsage();
      const s: Sample = {
        phase,
        t: (performance.now() - t0) / 1000,
        cycles,
        rss: procMemory().rss,
        heap: heapUsed(),
        heapTotal: mu.heapTotal,
        external: mu.external,
        ...(mu.arrayBuffers !== undefined ? { arrayBuffers: mu.arrayBuffers } : {}),
        fds: fds.total,
        sockets: fds.sockets,
        handles: activeResources(),
        timers: liveTimers(),
        apps,
        journal: client.journalSize,
        events: received,
        relists: m.relists,
        watches: m.watches,
        serverWatches: Number(stats.activeWatches),
        revisionEvents: client.metrics.revisionRequests,
        revisionLists: revisionRequests.lists,
        revisionWatchRequests: revisionRequests.watches,
        serverRevisionWatches: Number(stats.revisionWatches),
        serverRevisions: Number(stats.revisions),
      };
      samples.push(s);
      console.error(
        `[${runtime}] ${phase} t=${s.t.toFixed(0)}s cycles=${cycles} rss=${mib(s.rss)}MiB heap=${s.heap ? mib(s.heap) : "?"}MiB heapTotal=${mib(s.heapTotal ?? 0)}MiB external=${mib(s.external ?? 0)}MiB ` +
          `fds=${s.fds} sockets=${s.sockets} handles=${JSON.stringify(s.handles ?? {})} timers=${s.timers.timeouts}+${s.timers.intervals} apps=${apps} journal=${s.journal} relists=${s.relists} serverWatches=${s.serverWatches} ` +
          `revisions: events=${s.revisionEvents} lists=${s.revisionLists} watches=${s.revisionWatchRequests} open=${s.serverRevisionWatches} stored=${s.serverRevisions}`,
      );
    };
    const waitFor = async (cond: () => boolean, what: string, ms = 10_000) => {
      const deadline = performance.now() + ms;
      while (!cond()) {
        if (performance.now() > deadline) throw new Error(`soak: timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 1));
      }
    };
    await new Promise((r) => setTimeout(r, QUIET_MS)); // let the initial Revision lookups' idle connections close
    await sample("start");

    // ---- phase 1: relist cycles
    const c0 = performance.now();
    for (cycles = 1; cycles <= CYCLES; cycles++) {
      const modified = metrics().events.modified;
      await ctl("/ctl/change");
      await waitFor(() => metrics().events.modified > modified, `cycle ${cycles}: the change`);
      const relists = metrics().relists;
      await ctl("/ctl/expire");
      await waitFor(() => metrics().relists > relists && client.health().healthy, `cycle ${cycles}: the relist`);
      if (cycles % 100 === 0) await sample("cycles");
    }
    cycles--;
    const cyclesMs = performance.now() - c0;
    const m1 = metrics();
    await new Promise((r) => setTimeout(r, QUIET_MS));
    await sample("after-cycles");
    console.error(`[${runtime}] ${cycles} cycles in ${(cyclesMs / 1000).toFixed(1)} s: relists ${m1.relists}, expired ${m1.expired}, watches ${m1.watches}, failures ${m1.failures}`);

    // ---- phase 2: compressed steady state
    await ctl(`/ctl/activity?intervalMs=${INTERVAL_MS}`);
    const s0 = performance.now();
    while (performance.now() - s0 < STEADY_S * 1000) {
      await new Promise((r) => setTimeout(r, SAMPLE_S * 1000));
      await sample("steady");
    }
    const stopped = await ctl("/ctl/activity/stop");
    await new Promise((r) => setTimeout(r, QUIET_MS));
    await sample("end");
    const m2 = metrics();

    const cyc = samples.filter((s) => s.phase === "cycles");
    const steady = samples.filter((s) => s.phase === "steady" || s.phase === "end");
    const result = {
      runtime,
      runtimeVersion: runtimeVersion(),
      date: new Date().toISOString(),
      machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model.trim(), loadBefore: os.loadavg()[0] },
      config: { cycles: CYCLES, steadySeconds: STEADY_S, intervalMs: INTERVAL_MS, sampleSeconds: SAMPLE_S, apps: APPS, resumeWindow: RESUME_WINDOW },
      cycles: { count: cycles, ms: cyclesMs, relists: m1.relists, expired: m1.expired, watches: m1.watches, failures: m1.failures },
      steady: { changes: Number(stopped.steps), events: m2.events, emitted: m2.emitted, appEvents: client.metrics.events, unchanged: client.metrics.unchanged, revisionRequests: client.metrics.revisionRequests },
      samples,
      summary: {
        cyclesRss: { first: cyc[0]?.rss, last: cyc.at(-1)?.rss, min: Math.min(...cyc.map((s) => s.rss)), max: Math.max(...cyc.map((s) => s.rss)) },
        steadyRss: { first: steady[0]?.rss, last: steady.at(-1)?.rss, min: Math.min(...steady.map((s) => s.rss)), max: Math.max(...steady.map((s) => s.rss)) },
        quiet: samples.filter((s) => s.phase !== "cycles" && s.phase !== "steady").map((s) => ({ phase: s.phase, rss: s.rss, heap: s.heap, heapTotal: s.heapTotal, external: s.external, fds: s.fds, sockets: s.sockets, handles: s.handles, timers: s.timers })),
        sockets: [...new Set(samples.map((s) => s.sockets))],
        fds: [...new Set(samples.map((s) => s.fds))],
        handles: [...new Set(samples.map((s) => JSON.stringify(s.handles ?? null)))],
        timers: [...new Set(samples.map((s) => `${s.timers.timeouts}+${s.timers.intervals}`))],
        serverWatches: [...new Set(samples.map((s) => s.serverWatches))],
        serverRevisionWatches: [...new Set(samples.map((s) => s.serverRevisionWatches))],
        revisionEvents: samples.at(-1)?.revisionEvents,
        revisionRequests: { ...revisionRequests },
      },
    };
    const file = process.env.SOAK_RESULT_FILE ?? join(REPO_ROOT, "bench", "results", `soak-${runtime}.json`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(result, null, 2) + "\n");
    console.log(JSON.stringify(result.summary));
    console.log(`written: ${file}`);
  } finally {
    stop.abort();
    await client.stopWatching().catch(() => {});
    await drain?.catch(() => {});
    await kube.close?.();
    await server.close();
  }
}

try {
  await main();
  process.exit(0);
} catch (err) {
  console.error(`[${runtime}] SOAK FAILED: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
  process.exit(1);
}
