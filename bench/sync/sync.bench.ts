/**
 * B2 initial sync: N realistic Knative Services served by `bench/sync/server.ts`
 * (a separate Node process) as a paginated list (limit=500), loaded into a
 * synced store by several contenders, each measured in a fresh process of the
 * current runtime (`bench/sync/worker.ts`): wall time from the first request to
 * a complete store, peak RSS during the sync (VmHWM, reset just before), RSS
 * and JS heap retained after a forced GC with the store alive, and the bare
 * runtime's RSS for reference. Rounds alternate the contenders (order rotated
 * every round); the tables show medians.
 *
 * Run: `node --import tsx --expose-gc bench/sync/sync.bench.ts`,
 * `npx deno run -A --v8-flags=--expose-gc bench/sync/sync.bench.ts`, `npx bun bench/sync/sync.bench.ts`.
 * Env: SYNC_SIZES (default "1000,10000,50000"; 0 is allowed: an empty list, the baseline of
 * B7's bytes per app), SYNC_RUNS (default "3,5,3", per size), SYNC_VARIANTS_MAIN (at 10k;
 * default all), SYNC_VARIANTS_OTHER (other sizes), SYNC_RESULT_FILE.
 * B7 (memory per app): `SYNC_SIZES=0,1000,10000,50000 SYNC_VARIANTS_MAIN=appclient,client-node,client-node-rev
 * SYNC_VARIANTS_OTHER=appclient,client-node,client-node-rev SYNC_RESULT_FILE=bench/results/memory-<runtime>.json`,
 * tables by `bench/memory/report.ts`.
 * @module
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import process from "node:process";
import { dirname, join } from "node:path";
import { type HelperProcess, median, mib, REPO_ROOT, runSelf, runtime, runtimeVersion, startNodeHelper, type RuntimeName } from "../lib/common.ts";
import type { SyncServerMeta } from "./server.ts";
import type { WorkerResult } from "./worker.ts";

const SIZES = (process.env.SYNC_SIZES ?? "1000,10000,50000").split(",").map(Number);
const RUNS = (process.env.SYNC_RUNS ?? "3,5,3").split(",").map(Number);
const ALL = ["plain", "reflector", "reflector-prune", "reflector-pruned", "appclient", "client-node", "client-node-rev"];
const MAIN_SIZE = 10_000;
const MAIN_VARIANTS = (process.env.SYNC_VARIANTS_MAIN ?? ALL.join(",")).split(",");
const OTHER_VARIANTS = (process.env.SYNC_VARIANTS_OTHER ?? "reflector,reflector-prune,appclient,client-node").split(",");
/** Above this many objects, appclient runs skip waiting for every Revision lookup (it takes minutes at 50k). */
const SETTLE_MAX = Number(process.env.SYNC_SETTLE_MAX ?? 10_000);

/** Busy CPU seconds of the whole machine since boot (/proc/stat), or undefined. */
function machineBusySeconds(): number | undefined {
  try {
    const f = (readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
    return ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)) / 100;
  } catch {
    return undefined;
  }
}

/** CPU seconds of this driver plus its reaped children (workers, the server once closed): /proc/self/stat. */
function ownCpuSeconds(): number | undefined {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
  } catch {
    return undefined;
  }
}

/** Machine noise while one size was measured: load before, and CPU used by processes not of this benchmark. */
export interface SizeNoise {
  loadBefore: number;
  wallSeconds: number;
  otherCpuSeconds?: number;
}

export interface VariantSummary {
  variant: string;
  objects: number;
  runs: WorkerResult[];
  failed?: string;
  syncMs?: number;
  peakRss?: number;
  retainedRss?: number;
  heapRetained?: number;
  rssBefore?: number;
  settledMs?: number;
  settledPeakRss?: number;
}

export interface SyncResult {
  runtime: RuntimeName;
  runtimeVersion: string;
  date: string;
  machine: { cores: number; cpu: string; memoryGiB: number; platform: string; loadBefore: number };
  bare: { runs: WorkerResult[]; rss: number };
  sizes: { objects: number; server: SyncServerMeta; variants: VariantSummary[]; noise?: SizeNoise }[];
}

function summarize(variant: string, objects: number, runs: WorkerResult[], failed?: string): VariantSummary {
  const s: VariantSummary = { variant, objects, runs, ...(failed ? { failed } : {}) };
  if (runs.length === 0) return s;
  const m = (f: (r: WorkerResult) => number | undefined) => {
    const xs = runs.map(f).filter((x): x is number => x !== undefined);
    return xs.length ? median(xs) : undefined;
  };
  s.syncMs = m((r) => r.syncMs);
  s.peakRss = m((r) => r.peakRss);
  s.retainedRss = m((r) => r.retainedRss);
  s.heapRetained = m((r) => r.heapRetained);
  s.rssBefore = m((r) => r.rssBefore);
  s.settledMs = m((r) => r.settledMs);
  s.settledPeakRss = m((r) => r.settledPeakRss);
  return s;
}

async function main(): Promise<void> {
  const cpus = os.cpus();
  const result: SyncResult = {
    runtime,
    runtimeVersion: runtimeVersion(),
    date: new Date().toISOString(),
    machine: {
      cores: cpus.length,
      cpu: cpus[0]?.model.trim() ?? "?",
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      loadBefore: os.loadavg()[0] ?? 0,
    },
    bare: { runs: [], rss: 0 },
    sizes: [],
  };
  console.error(`[${runtime}] ${result.runtimeVersion}: sizes ${SIZES.join(", ")}; runs ${RUNS.join(", ")}`);
  for (let i = 0; i < 5; i++) result.bare.runs.push(await runSelf<WorkerResult>("bench/sync/worker.ts", { SYNC_VARIANT: "bare" }));
  result.bare.rss = median(result.bare.runs.map((r) => Math.max(r.hwmBeforeSync, r.peakRss)));
  console.error(`[${runtime}] bare runtime: ${mib(result.bare.rss)} MiB`);

  for (let si = 0; si < SIZES.length; si++) {
    const objects = SIZES[si]!;
    const runs = RUNS[si] ?? RUNS[RUNS.length - 1]!;
    const variants = objects === MAIN_SIZE ? MAIN_VARIANTS : OTHER_VARIANTS;
    let server: HelperProcess<SyncServerMeta> | undefined;
    const noise0 = { load: os.loadavg()[0] ?? 0, busy: machineBusySeconds(), own: ownCpuSeconds(), t: performance.now() };
    let entry: SyncResult["sizes"][number] | undefined;
    try {
      server = await startNodeHelper<SyncServerMeta>("bench/sync/server.ts", ["--objects", String(objects)]);
      const meta = server.meta;
      console.error(`[${runtime}] ${objects} objects: list ${(meta.listBytes / 1e6).toFixed(1)} MB in ${meta.pages} pages (server generated them in ${meta.generateMs} ms)`);
      const got = new Map<string, WorkerResult[]>(variants.map((v) => [v, []]));
      const failed = new Map<string, string>();
      // One warm-up run of each contender (fresh processes, so this only warms the server and the disk cache).
      for (const v of objects <= MAIN_SIZE ? variants : []) {
        try {
          await runSelf<WorkerResult>("bench/sync/worker.ts", { SYNC_VARIANT: v, SYNC_URL: meta.url, SYNC_OBJECTS: String(objects), SYNC_NO_SETTLE: objects > SETTLE_MAX ? "1" : "0" });
        } catch (e) {
          failed.set(v, (e as Error).message);
          console.error(`[${runtime}] ${v} @ ${objects}: n/a — ${(e as Error).message}`);
        }
      }
      for (let round = 0; round < runs; round++) {
        const active = variants.filter((v) => !failed.has(v));
        const shift = round % Math.max(1, active.length);
        const order = [...active.slice(shift), ...active.slice(0, shift)];
        const line: string[] = [];
        for (const v of order) {
          try {
            const r = await runSelf<WorkerResult>("bench/sync/worker.ts", { SYNC_VARIANT: v, SYNC_URL: meta.url, SYNC_OBJECTS: String(objects), SYNC_NO_SETTLE: objects > SETTLE_MAX ? "1" : "0" });
            got.get(v)!.push(r);
            line.push(`${v} ${Math.round(r.syncMs)} ms/${mib(r.peakRss)} MiB`);
          } catch (e) {
            failed.set(v, (e as Error).message);
            line.push(`${v} failed`);
          }
        }
        console.error(`[${runtime}] ${objects} round ${round + 1}/${runs}: ${line.join(", ")}`);
      }
      entry = { objects, server: meta, variants: variants.map((v) => summarize(v, objects, got.get(v)!, failed.get(v))) };
      result.sizes.push(entry);
    } finally {
      await server?.close();
    }
    const busy1 = machineBusySeconds();
    const own1 = ownCpuSeconds();
    const wallSeconds = (performance.now() - noise0.t) / 1000;
    entry.noise = { loadBefore: noise0.load, wallSeconds };
    if (noise0.busy !== undefined && busy1 !== undefined && noise0.own !== undefined && own1 !== undefined) {
      entry.noise.otherCpuSeconds = Math.max(0, busy1 - noise0.busy - (own1 - noise0.own));
    }
    console.error(`[${runtime}] ${objects}: load ${noise0.load.toFixed(2)} before; other processes ${entry.noise.otherCpuSeconds?.toFixed(1) ?? "?"} CPU-s in ${wallSeconds.toFixed(0)} s`);
  }

  const file = process.env.SYNC_RESULT_FILE ?? join(REPO_ROOT, "bench", "results", `sync-${runtime}.json`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(result, null, 2) + "\n");
  console.log(table(result));
  console.log(`\nwritten: ${file}`);
}

/** The per-runtime Markdown table. */
function table(r: SyncResult): string {
  const rows = [
    `#### ${r.runtimeVersion}: bare runtime ${mib(r.bare.rss)} MiB`,
    "",
    "| objects | list MB | contender | sync ms | vs client-node | peak RSS MiB | peak above bare ÷ list bytes | retained RSS above bare ÷ list | JS heap retained ÷ list |",
    "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const s of r.sizes) {
    const cn = s.variants.find((v) => v.variant === "client-node");
    for (const v of s.variants) {
      if (v.syncMs === undefined) {
        rows.push(`| ${s.objects.toLocaleString("en-US")} | ${(s.server.listBytes / 1e6).toFixed(1)} | ${v.variant} | n/a | | | | | ${v.failed?.slice(0, 120) ?? ""} |`);
        continue;
      }
      const list = s.server.listBytes;
      rows.push(
        `| ${s.objects.toLocaleString("en-US")} | ${(list / 1e6).toFixed(1)} | ${v.variant} | ${Math.round(v.syncMs)} | ` +
          `${cn?.syncMs ? (v.syncMs / cn.syncMs).toFixed(2) + "×" : "n/a"} | ${mib(v.peakRss!)} | ` +
          `${((v.peakRss! - r.bare.rss) / list).toFixed(2)}× | ${((v.retainedRss! - r.bare.rss) / list).toFixed(2)}× | ` +
          `${v.heapRetained !== undefined && v.runs[0]?.heapBefore !== undefined ? ((v.heapRetained - v.runs[0].heapBefore) / list).toFixed(2) + "×" : "n/a"} |`,
      );
    }
  }
  return rows.join("\n");
}

try {
  await main();
  process.exit(0);
} catch (err) {
  console.error(`[${runtime}] SYNC BENCHMARK FAILED: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
  process.exit(1);
}
