/**
 * B4: `kserviceToApp` per object vs `JSON.parse` of the same object's JSON.
 *
 *   node --import tsx bench/convert/convert.bench.ts
 *   npx deno run -A bench/convert/convert.bench.ts
 *   npx bun bench/convert/convert.bench.ts
 *
 * Fixtures: `bench/lib/data.ts` watch events (realistic 4–6 KB KServices), made
 * convertible the way Flyte writes them: the `flyte.org/app-id` annotation
 * from the project/domain/app-name labels, and the generator's random
 * `flyte.org/app-spec` blob replaced by a real binary-protobuf
 * `flyte.org/spec` of about the same size (container, env, resources,
 * autoscaling, profile, links…), one spec per service, so a service's events
 * share their spec as in a real watch stream (status changes dominate).
 * (The fixture code lives in `bench/lib/fixtures.ts`, shared with B3.)
 *
 * Contenders, each over the same N objects (one "run" = all N):
 *   parse       JSON.parse(json) of each object's JSON (the reference)
 *   convert     AppConverter.convert(object) (what the app client runs) on the parsed objects, in stream order
 *   cold        the same on objects that all carry a different spec (no reuse possible; own converter)
 * Two phases (parse vs convert, then parse vs cold, so the spec memo of one
 * is not thrashed by the other), each one warm-up round then BENCH_RUNS rounds
 * (default 15) with the two contenders alternating in a rotated order;
 * medians per contender (parse over both phases); ratio = median(contender) /
 * median(parse). Goal: convert ≤ 0.33× parse.
 *
 * Env: BENCH_CONVERT_N (default 5,000 objects), BENCH_RUNS, BENCH_RESULT_FILE
 * (JSON result; default bench/results/convert-<runtime>.json).
 * @module
 */
import process from "node:process";
import os from "node:os";
import { writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { convertibleObjects } from "../lib/fixtures.ts";
import { writeB4 } from "./report.ts";
import { AppConverter } from "../../src/flyte/convert.ts";
import { type AppsConfig, DEFAULT_APPS_CONFIG } from "../../src/flyte/model.ts";
import type { KubeObject } from "../../src/watch/types.ts";

const N = Number(process.env.BENCH_CONVERT_N ?? 5000);
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const RUNTIME: "node" | "deno" | "bun" = g.Deno?.version?.deno ? "deno" : g.Bun ? "bun" : "node";
const RESULT_FILE = process.env.BENCH_RESULT_FILE ?? join(ROOT, "bench", "results", `convert-${RUNTIME}.json`);
const CONFIG: AppsConfig = { ...DEFAULT_APPS_CONFIG, baseDomain: "apps.example.com", scheme: "https" };
// One converter per contender, as the app client keeps one: the spec memo of one phase does not thrash the other.
const streamConverter = new AppConverter(CONFIG);
const coldConverter = new AppConverter(CONFIG);

function runtimeVersion(): string {
  if (RUNTIME === "deno") return `Deno ${g.Deno.version.deno} (V8 ${g.Deno.version.v8})`;
  if (RUNTIME === "bun") return `Bun ${g.Bun.version} (JavaScriptCore, ${String(g.Bun.revision).slice(0, 9)})`;
  return `Node ${process.versions.node} (V8 ${process.versions.v8})`;
}

/** Each object and its JSON (the exact text JSON.parse is timed on). */
function fixtures(n: number, uniqueSpecs: boolean): { objects: KubeObject[]; json: string[] } {
  const json = convertibleObjects(n, { uniqueSpecs, seed: uniqueSpecs ? 7 : 20251130 }).map((o) => JSON.stringify(o));
  return { objects: json.map((j) => JSON.parse(j) as KubeObject), json };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function gc(): void {
  if (typeof g.gc === "function") g.gc();
  else if (g.Bun?.gc) g.Bun.gc(true);
}

let sink = 0;
const stream = fixtures(N, false);
const cold = fixtures(N, true);
const bytes = stream.json.reduce((s, j) => s + new TextEncoder().encode(j).byteLength, 0);

const contenders: { id: string; label: string; run: () => void }[] = [
  {
    id: "parse",
    label: "JSON.parse(object JSON)",
    run: () => {
      for (const j of stream.json) sink += (JSON.parse(j) as KubeObject).metadata.name!.length;
    },
  },
  {
    id: "convert",
    label: "kserviceToApp (the product's AppConverter), watch-stream order (a service's spec repeats)",
    run: () => {
      for (const o of stream.objects) sink += streamConverter.convert(o).metadata!.id!.name!.length;
    },
  },
  {
    id: "cold",
    label: "kserviceToApp (the product's AppConverter), every object a different spec",
    run: () => {
      for (const o of cold.objects) sink += coldConverter.convert(o).metadata!.id!.name!.length;
    },
  },
];

// Two phases, each alternating JSON.parse with one conversion contender: the spec memo must not
// be thrashed by the other contender's 5,000 distinct specs in between.
const times = new Map<string, number[]>(contenders.map((c) => [c.id, []]));
const t0 = performance.now();
for (const phase of [["parse", "convert"], ["parse", "cold"]]) {
  const group = contenders.filter((c) => phase.includes(c.id));
  for (let round = 0; round <= RUNS; round++) {
    for (let k = 0; k < group.length; k++) {
      const c = group[(k + round) % group.length]!;
      gc();
      const s = performance.now();
      c.run();
      const ms = performance.now() - s;
      if (round > 0) times.get(c.id)!.push(ms);
    }
  }
}
const parseMs = median(times.get("parse")!);
const results = contenders.map((c) => {
  const runs = times.get(c.id)!;
  const med = median(runs);
  return {
    id: c.id,
    label: c.label,
    medianMs: med,
    usPerObject: (med * 1000) / N,
    minMs: Math.min(...runs),
    maxMs: Math.max(...runs),
    vsParse: med / parseMs,
    runsMs: runs,
  };
});
const out = {
  benchmark: "B4 conversion",
  runtime: RUNTIME,
  runtimeVersion: runtimeVersion(),
  date: new Date().toISOString(),
  machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model ?? "?", memoryGiB: Math.round(os.totalmem() / 2 ** 30), platform: `${os.platform()} ${os.release()} ${os.arch()}` },
  objects: N,
  avgObjectBytes: Math.round(bytes / N),
  runs: RUNS,
  gcBetweenRuns: typeof g.gc === "function" || Boolean(g.Bun?.gc),
  results,
  goal: 0.33,
  goalMet: results.find((r) => r.id === "convert")!.vsParse <= 0.33,
  totalMs: performance.now() - t0,
  sink,
};
mkdirSync(dirname(RESULT_FILE), { recursive: true });
writeFileSync(RESULT_FILE, JSON.stringify(out, null, 2) + "\n");
console.log(`B4 ${out.runtimeVersion}: ${N} objects, ${out.avgObjectBytes} B avg, ${RUNS} runs (median)`);
for (const r of results) {
  console.log(`  ${r.label.padEnd(62)} ${r.medianMs.toFixed(1).padStart(8)} ms  ${r.usPerObject.toFixed(2).padStart(7)} µs/object  ${r.vsParse.toFixed(2)}× parse`);
}
console.log(`  goal ≤ 0.33× parse: ${out.goalMet ? "met" : "MISSED"}`);
if (!process.env.BENCH_RESULT_FILE) writeB4(join(ROOT, "bench", "results"));
