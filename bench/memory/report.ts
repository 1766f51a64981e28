/**
 * B7 memory per app, and B2's initial sync at 50k against the Revision watch: the tables of
 * `bench/results/B7.md`, from `bench/results/memory-{node,deno,bun}.json` (written by
 * `bench/sync/sync.bench.ts` with `SYNC_SIZES=0,1000,10000,50000` and the variants `appclient`,
 * `client-node`, `client-node-rev`; see that file). Replaces the text between
 * `<!-- memory-report:start -->` and `<!-- memory-report:end -->` in B7.md (or prints it when
 * the markers are missing). Run: `node --import tsx bench/memory/report.ts`.
 *
 * Bytes retained per app = (JS heap after a forced GC with N apps stored − the same with 0
 * stored) ÷ N, both medians over fresh processes of the same contender; ÷ the KService's JSON
 * bytes (compact JSON of one list item, mean over the N).
 * @module
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { mib, REPO_ROOT, type RuntimeName, TITLES } from "../lib/common.ts";
import type { SyncResult, VariantSummary } from "../sync/sync.bench.ts";

const DIR = join(REPO_ROOT, "bench", "results");
const runtimes: RuntimeName[] = ["node", "deno", "bun"];
const results = runtimes
  .map((r) => join(DIR, `memory-${r}.json`))
  .filter((f) => existsSync(f))
  .map((f) => JSON.parse(readFileSync(f, "utf8")) as SyncResult);

const PRODUCT = "appclient";
const SAME = "client-node-rev";
const KSVC = "client-node";
const x = (n: number | undefined, d = 2) => (n === undefined || !Number.isFinite(n) ? "n/a" : `${n.toFixed(d)}×`);
const int = (n: number | undefined) => (n === undefined || !Number.isFinite(n) ? "n/a" : Math.round(n).toLocaleString("en-US"));
const at = (r: SyncResult, n: number) => r.sizes.find((s) => s.objects === n);
const v = (r: SyncResult, n: number, id: string): VariantSummary | undefined => at(r, n)?.variants.find((s) => s.variant === id);
const cnVersion = (r: SyncResult) => r.sizes.flatMap((s) => s.variants).flatMap((q) => q.runs).find((w) => w.clientNode)?.clientNode ?? "?";

/** Bytes retained per app at N: (median heap with N − median heap with 0) ÷ N. */
function perApp(r: SyncResult, n: number, id: string): number | undefined {
  const h = v(r, n, id)?.heapRetained;
  const h0 = v(r, 0, id)?.heapRetained;
  return h === undefined || h0 === undefined || n === 0 ? undefined : (h - h0) / n;
}
/** Mean compact JSON bytes of one KService (and one Revision) at N. */
const ksvcBytes = (r: SyncResult, n: number) => (at(r, n)?.server.itemBytes ?? NaN) / n;
const revBytes = (r: SyncResult, n: number) => (at(r, n)?.server.revisionItemBytes ?? NaN) / n;

const out: string[] = [];
const sizes = [1_000, 10_000, 50_000];
const head = (label: string) => {
  out.push(`| ${label} | ` + results.map((r) => `${TITLES[r.runtime]} (client-node ${cnVersion(r)})`).join(" | ") + " |");
  out.push("|---|" + results.map(() => "---:").join("|") + "|");
};
const row = (label: string, f: (r: SyncResult) => string) => out.push(`| ${label} | ${results.map(f).join(" | ")} |`);

out.push("#### Bytes retained per app ÷ the KService's JSON bytes (JS heap after GC, N stored − 0 stored, ÷ N)", "");
head("");
row("KService JSON bytes (mean, compact) / Revision JSON bytes", (r) => `${int(ksvcBytes(r, 10_000))} / ${int(revBytes(r, 10_000))}`);
for (const n of sizes) {
  row(`${n.toLocaleString("en-US")}: **product path** (AppK8sClient) bytes per app ÷ KService JSON`, (r) => `${x(perApp(r, n, PRODUCT)! / ksvcBytes(r, n))} (${int(perApp(r, n, PRODUCT))} B)`);
  row(`${n.toLocaleString("en-US")}: client-node, KService + Revision informers ÷ KService JSON`, (r) => `${x(perApp(r, n, SAME)! / ksvcBytes(r, n))} (${int(perApp(r, n, SAME))} B)`);
  row(`${n.toLocaleString("en-US")}: client-node, KService informer only ÷ KService JSON`, (r) => `${x(perApp(r, n, KSVC)! / ksvcBytes(r, n))} (${int(perApp(r, n, KSVC))} B)`);
  row(`${n.toLocaleString("en-US")}: **product ÷ client-node (same objects)**`, (r) => x(perApp(r, n, PRODUCT)! / perApp(r, n, SAME)!));
  row(`${n.toLocaleString("en-US")}: product ÷ client-node (KServices only)`, (r) => x(perApp(r, n, PRODUCT)! / perApp(r, n, KSVC)!));
}
out.push("");

out.push("#### RSS with the store alive (after a forced GC), and its ratio to client-node", "");
head("");
row("bare runtime RSS (MiB)", (r) => mib(r.bare.rss));
for (const n of [0, ...sizes]) {
  const rss = (r: SyncResult, id: string) => v(r, n, id)?.retainedRss;
  row(`${n.toLocaleString("en-US")}: product / client-node same objects / KServices only (MiB)`, (r) => `${mib(rss(r, PRODUCT) ?? NaN)} / ${mib(rss(r, SAME) ?? NaN)} / ${mib(rss(r, KSVC) ?? NaN)}`);
  row(`${n.toLocaleString("en-US")}: **product RSS ÷ client-node (same objects)**`, (r) => x((rss(r, PRODUCT) ?? NaN) / (rss(r, SAME) ?? NaN)));
  row(`${n.toLocaleString("en-US")}: product RSS ÷ client-node (KServices only)`, (r) => x((rss(r, PRODUCT) ?? NaN) / (rss(r, KSVC) ?? NaN)));
}
out.push("");

out.push("#### B2 at 50,000: initial sync time and peak RSS, product path ÷ client-node", "");
head("50,000 apps");
const N = 50_000;
row("list JSON MB: KServices + Revisions", (r) => `${((at(r, N)?.server.listBytes ?? NaN) / 1e6).toFixed(1)} + ${((at(r, N)?.server.revisionListBytes ?? NaN) / 1e6).toFixed(1)}`);
row("sync ms: product / client-node same objects / KServices only", (r) => `${int(v(r, N, PRODUCT)?.syncMs)} / ${int(v(r, N, SAME)?.syncMs)} / ${int(v(r, N, KSVC)?.syncMs)}`);
row("**sync time ÷ client-node (same objects)**", (r) => x((v(r, N, PRODUCT)?.syncMs ?? NaN) / (v(r, N, SAME)?.syncMs ?? NaN)));
row("sync time ÷ client-node (KServices only)", (r) => x((v(r, N, PRODUCT)?.syncMs ?? NaN) / (v(r, N, KSVC)?.syncMs ?? NaN)));
row("peak RSS MiB: product / client-node same objects / KServices only", (r) => `${mib(v(r, N, PRODUCT)?.peakRss ?? NaN)} / ${mib(v(r, N, SAME)?.peakRss ?? NaN)} / ${mib(v(r, N, KSVC)?.peakRss ?? NaN)}`);
row("**peak RSS ÷ client-node (same objects)**", (r) => x((v(r, N, PRODUCT)?.peakRss ?? NaN) / (v(r, N, SAME)?.peakRss ?? NaN)));
row("peak RSS ÷ client-node (KServices only)", (r) => x((v(r, N, PRODUCT)?.peakRss ?? NaN) / (v(r, N, KSVC)?.peakRss ?? NaN)));
const lists = (r: SyncResult) => (at(r, N)?.server.listBytes ?? NaN) + (at(r, N)?.server.revisionListBytes ?? NaN);
row("peak RSS above bare ÷ list bytes (KServices + Revisions): product / client-node same objects", (r) => `${x(((v(r, N, PRODUCT)?.peakRss ?? NaN) - r.bare.rss) / lists(r))} / ${x(((v(r, N, SAME)?.peakRss ?? NaN) - r.bare.rss) / lists(r))}`);
row("product: sync time 50k ÷ 10k (×5 objects)", (r) => x((v(r, N, PRODUCT)?.syncMs ?? NaN) / (v(r, 10_000, PRODUCT)?.syncMs ?? NaN), 1));
row("client-node same objects: sync time 50k ÷ 10k", (r) => x((v(r, N, SAME)?.syncMs ?? NaN) / (v(r, 10_000, SAME)?.syncMs ?? NaN), 1));
row("noise during the 50k size: load before; other processes' CPU", (r) => {
  const n = at(r, N)?.noise;
  return n ? `${n.loadBefore.toFixed(2)}; ${n.otherCpuSeconds !== undefined ? ((n.otherCpuSeconds / (n.wallSeconds * r.machine.cores)) * 100).toFixed(0) : "?"} % of ${r.machine.cores} cores` : "n/a";
});
row("runs (fresh processes, medians)", (r) => String(v(r, N, PRODUCT)?.runs.length ?? 0));
out.push("");

out.push("#### All medians, per runtime", "");
for (const r of results) {
  out.push(`##### ${TITLES[r.runtime]}: ${r.runtimeVersion}, client-node ${cnVersion(r)} (bare runtime ${mib(r.bare.rss)} MiB; ${r.date.slice(0, 16).replace("T", " ")} UTC)`, "");
  out.push("| apps | contender | runs | sync ms | peak RSS MiB | retained RSS MiB | JS heap before MiB | JS heap retained MiB | noise: load before; other processes' CPU during the size |");
  out.push("|---:|---|---:|---:|---:|---:|---:|---:|---|");
  for (const s of r.sizes) {
    const nz = s.noise ? `${s.noise.loadBefore.toFixed(2)}; ${s.noise.otherCpuSeconds?.toFixed(0) ?? "?"} CPU-s in ${s.noise.wallSeconds.toFixed(0)} s (${s.noise.otherCpuSeconds !== undefined ? ((s.noise.otherCpuSeconds / (s.noise.wallSeconds * r.machine.cores)) * 100).toFixed(0) : "?"} % of ${r.machine.cores} cores)` : "";
    for (const q of s.variants) {
      out.push(
        `| ${s.objects.toLocaleString("en-US")} | ${q.variant} | ${q.runs.length} | ${int(q.syncMs)} | ${mib(q.peakRss ?? NaN)} | ${mib(q.retainedRss ?? NaN)} | ${mib(q.runs[0]?.heapBefore ?? NaN)} | ${mib(q.heapRetained ?? NaN)} | ${q === s.variants[0] ? nz : ""}${q.failed ? ` failed: ${q.failed.slice(0, 80).replace(/\|/g, "\\|")}` : ""} |`,
      );
    }
  }
  out.push("");
}

const text = out.join("\n");
const md = join(DIR, "B7.md");
const START = "<!-- memory-report:start -->";
const END = "<!-- memory-report:end -->";
const doc = existsSync(md) ? readFileSync(md, "utf8") : "";
const a = doc.indexOf(START);
const b = doc.indexOf(END);
if (a >= 0 && b > a) {
  writeFileSync(md, doc.slice(0, a + START.length) + "\n\n" + text + "\n" + doc.slice(b));
  console.error(`wrote the tables of ${results.length} runtimes into ${md}`);
} else {
  process.stdout.write(text + "\n");
}
