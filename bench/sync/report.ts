/**
 * Prints the Markdown tables of B2 (initial sync) from
 * `bench/results/sync-{node,deno,bun}.json` (written by `bench/sync/sync.bench.ts`).
 * Run: `node --import tsx bench/sync/report.ts`.
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { mib, REPO_ROOT, type RuntimeName, TITLES } from "../lib/common.ts";
// Type-only: sync.bench.ts is a script, nothing of it runs here.
import type { SyncResult, VariantSummary } from "./sync.bench.ts";

type Summary = VariantSummary;
type Result = SyncResult;

const LABEL: Record<string, string> = {
  plain: "plain `fetch` + `JSON.parse` → `Map` (reference)",
  reflector: "appwatch `Reflector`",
  "reflector-prune": "**appwatch `Reflector` + `prune`** (byte-level, list pages)",
  "reflector-pruned": "`Reflector`, `parse` drops managedFields + spec",
  appclient: "appwatch `AppK8sClient`",
  "client-node": "client-node 1.4.0 `makeInformer`",
};

const runtimes: RuntimeName[] = ["node", "deno", "bun"];
const results = runtimes
  .map((r) => join(REPO_ROOT, "bench", "results", `sync-${r}.json`))
  .filter((f) => existsSync(f))
  .map((f) => JSON.parse(readFileSync(f, "utf8")) as Result);

const out: string[] = [];
const x = (n: number | undefined, d = 2) => (n === undefined || !Number.isFinite(n) ? "n/a" : `${n.toFixed(d)}×`);

// Summary at 10k: the goals.
out.push("| 10,000 objects | " + results.map((r) => TITLES[r.runtime]).join(" | ") + " |");
out.push("|---|" + results.map(() => "---:").join("|") + "|");
const at = (r: Result, n: number) => r.sizes.find((s) => s.objects === n);
const v = (r: Result, n: number, id: string) => at(r, n)?.variants.find((s) => s.variant === id);
const row = (label: string, f: (r: Result) => string) => out.push(`| ${label} | ${results.map(f).join(" | ")} |`);
row("list JSON (MB, 10⁶ B)", (r) => ((at(r, 10_000)?.server.listBytes ?? NaN) / 1e6).toFixed(1));
row("bare runtime RSS (MiB)", (r) => mib(r.bare.rss));
for (const id of ["reflector", "reflector-prune", "appclient", "client-node", "plain"]) {
  row(`${LABEL[id]}: sync ms`, (r) => (v(r, 10_000, id)?.syncMs !== undefined ? Math.round(v(r, 10_000, id)!.syncMs!).toLocaleString("en-US") : "n/a"));
}
for (const id of ["reflector", "reflector-prune", "reflector-pruned", "appclient", "plain"]) {
  row(`**${id} time ÷ client-node** (goal ≤ 0.8×)`, (r) => x((v(r, 10_000, id)?.syncMs ?? NaN) / (v(r, 10_000, "client-node")?.syncMs ?? NaN)));
}
for (const id of ["reflector", "reflector-prune", "reflector-pruned", "appclient", "client-node", "plain"]) {
  row(`**${id}: peak RSS above bare ÷ list bytes** (goal ≤ 1.0×)`, (r) => x(((v(r, 10_000, id)?.peakRss ?? NaN) - r.bare.rss) / (at(r, 10_000)?.server.listBytes ?? NaN)));
}
for (const id of ["reflector", "reflector-prune", "reflector-pruned", "appclient", "client-node", "plain"]) {
  row(`${id}: JS heap retained (after GC) ÷ list bytes`, (r) => {
    const s = v(r, 10_000, id);
    return s?.heapRetained !== undefined && s.runs[0]?.heapBefore !== undefined ? x((s.heapRetained - s.runs[0].heapBefore) / (at(r, 10_000)?.server.listBytes ?? NaN)) : "n/a";
  });
}
row("appclient: all 10,000 Revision lookups done after the sync (ms)", (r) => (v(r, 10_000, "appclient")?.settledMs !== undefined ? Math.round(v(r, 10_000, "appclient")!.settledMs!).toLocaleString("en-US") : "n/a"));
out.push("");

for (const r of results) {
  out.push(`#### ${TITLES[r.runtime]}: ${r.runtimeVersion} (bare runtime ${mib(r.bare.rss)} MiB; load before ${r.machine.loadBefore.toFixed(2)})`);
  out.push("");
  out.push("| objects | list MB | contender | sync ms | ÷ client-node | MB/s | peak RSS MiB | RSS after imports MiB | peak above bare ÷ list | retained RSS above bare ÷ list | JS heap retained ÷ list |");
  out.push("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const s of r.sizes) {
    const list = s.server.listBytes;
    const cn = s.variants.find((q) => q.variant === "client-node");
    for (const q of s.variants) {
      if (q.syncMs === undefined) {
        out.push(`| ${s.objects.toLocaleString("en-US")} | ${(list / 1e6).toFixed(1)} | ${LABEL[q.variant] ?? q.variant} | n/a | | | | | | | ${(q.failed ?? "").slice(0, 100).replace(/\|/g, "\\|")} |`);
        continue;
      }
      const heap = q.heapRetained !== undefined && q.runs[0]?.heapBefore !== undefined ? x((q.heapRetained - q.runs[0].heapBefore) / list) : "n/a";
      out.push(
        `| ${s.objects.toLocaleString("en-US")} | ${(list / 1e6).toFixed(1)} | ${LABEL[q.variant] ?? q.variant} | ${Math.round(q.syncMs).toLocaleString("en-US")} | ` +
          `${cn?.syncMs ? x(q.syncMs / cn.syncMs) : "n/a"} | ${(list / 1e6 / (q.syncMs / 1000)).toFixed(0)} | ${mib(q.peakRss!)} | ${mib(q.rssBefore!)} | ` +
          `${x((q.peakRss! - r.bare.rss) / list)} | ${x((q.retainedRss! - r.bare.rss) / list)} | ${heap} |`,
      );
    }
  }
  out.push("");
}
process.stdout.write(out.join("\n") + "\n");
