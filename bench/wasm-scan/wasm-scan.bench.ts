/**
 * B1-wasm: can a WebAssembly SIMD structural scanner make the pruned decode
 * path beat the `JSON.parse` ceiling? (Issue 16, item 3, research part.)
 *
 * One process per runtime, bytes in memory, the B1 stream of `bench/lib/data.ts`
 * (BENCH_EVENTS, default 20,000 events ≈ 101.7 MB). Contenders, run one
 * after the other in an order rotated every round (1 warm-up + BENCH_RUNS,
 * default 5, measured rounds; medians; a full GC before each where the
 * runtime offers one):
 *
 * - (a) ceiling: `JSON.parse` of pre-split string lines (B1's (1));
 * - (b) JS pruner: line bytes → `JsonPruner.pruneToString` → `JSON.parse`;
 * - (c) WASM pruner: line bytes → copied into WASM memory → `WasmJsonPruner.pruneToString`
 *   (the same walk, containers skipped by `bench/wasm-scan/assembly/scan.ts`) → `JSON.parse`;
 * - (e) the whole walk in WASM (`WasmWalkPruner`): line bytes → copied in → pruned and the kept
 *   bytes copied out in WASM → decoded from WASM memory → `JSON.parse`;
 * - (b2)/(c2)/(e2): the same pruners inside the product's decoder: 64 KiB chunks in memory →
 *   `ndjsonValues({ prune })` (B1's (6));
 * - (d) the scanners alone: the prune walk without decode/parse (JS vs WASM), and the bare
 *   WASM `skip` of the removed subtrees (copy into WASM memory included), in GB/s;
 * - (f) the floor: decode + `JSON.parse` of the already-pruned bytes (what is left once the scan is free).
 *
 * The `.wasm` is built from source at start (`bench/wasm-scan/build.ts`, AssemblyScript from
 * node_modules, into a temp dir); after the rounds `bench/wasm-scan/check.ts` compares the WASM
 * pruners with `JsonPruner` on all the bench lines and the tricky inputs: any mismatch fails the
 * bench (no result is written). Every
 * parse contender is checked to have decoded all events (count + order-sensitive name checksum),
 * every walk to have kept the same bytes.
 *
 * Run one runtime: `node --import tsx --expose-gc bench/wasm-scan/wasm-scan.bench.ts`,
 * `npx deno run -A --v8-flags=--expose-gc bench/wasm-scan/wasm-scan.bench.ts`, `npx bun bench/wasm-scan/wasm-scan.bench.ts`
 * (each writes `bench/results/wasm-scan-<runtime>.json`). All three, one after the other, then
 * `bench/results/B1-wasm.md`: `node --import tsx bench/wasm-scan/wasm-scan.bench.ts --all`
 * (wrap final runs in `flock /tmp/appwatch-bench.lock`).
 * @module
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import process from "node:process";
import { join } from "node:path";
import { ndjsonValues } from "../../src/watch/ndjson.ts";
import { JsonPruner, type PrunePaths } from "../../src/watch/prune.ts";
import { chunkBytes, encodeNdjson, generateEvents, NameChecksum } from "../lib/data.ts";
import { REPO_ROOT } from "../lib/common.ts";
import { differentialCheck } from "./check.ts";
import { WasmJsonPruner, WasmWalkPruner } from "./pruner.ts";
import { ScanWasm } from "./wasm.ts";

interface DenoGlobal { version: { deno: string; v8: string } }
interface BunGlobal { version: string; revision: string; gc(force: boolean): void }
const g = globalThis as unknown as { Deno?: DenoGlobal; Bun?: BunGlobal; gc?: () => void };
type RuntimeName = "node" | "deno" | "bun";
const runtime: RuntimeName = g.Deno ? "deno" : g.Bun ? "bun" : "node";
const RESULTS = join(REPO_ROOT, "bench", "results");
const PRUNE: PrunePaths = [["object", "metadata", "managedFields"], ["object", "spec"]];

function runtimeVersion(): string {
  if (g.Deno) return `Deno ${g.Deno.version.deno} (V8 ${g.Deno.version.v8})`;
  if (g.Bun) return `Bun ${g.Bun.version} (JavaScriptCore, ${g.Bun.revision.slice(0, 9)})`;
  return `Node ${process.version.slice(1)} (V8 ${process.versions.v8})`;
}
function fullGc(): void {
  if (g.Bun) g.Bun.gc(true);
  else if (typeof g.gc === "function") g.gc();
}
function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  const n = raw ? Number(raw) : fallback;
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer`);
  return n;
}
function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
/** Busy CPU seconds of the whole machine since boot (/proc/stat), or undefined. */
function machineBusySeconds(): number | undefined {
  try {
    const f = (readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
    return ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)) / 100;
  } catch {
    return undefined;
  }
}

export interface ContenderResult {
  id: string;
  label: string;
  runsMs: number[];
  medianMs: number;
  /** Bytes the rate is computed over (line bytes; for the bare skip: the skipped bytes). */
  bytes: number;
}
export interface WasmScanResult {
  runtime: RuntimeName;
  runtimeVersion: string;
  date: string;
  events: number;
  lineBytes: number;
  keptBytes: number;
  skippedBytes: number;
  runs: number;
  wasm: { bytes: number; buildMs: number; simdBlocks: number; scalarRuns: number };
  check: { cases: number; ms: number };
  contenders: ContenderResult[];
  noise: { loadBefore: number; wallSeconds: number; otherCpuSeconds?: number; cores: number };
  cpuSeconds: number;
}

async function measure(): Promise<WasmScanResult> {
  const events = envInt("BENCH_EVENTS", 20_000);
  const runs = envInt("BENCH_RUNS", 5);
  const t0 = performance.now();
  const built = await ScanWasm.build();
  const scan = built.scan;
  const { lines, checksum } = generateEvents(events);
  console.error(`wasm-scan ${runtime}: built ${built.wasmBytes} B in ${built.buildMs.toFixed(0)} ms`);

  const enc = new TextEncoder();
  const td = new TextDecoder();
  const bytes = lines.map((l) => enc.encode(l));
  const lineBytes = bytes.reduce((a, b) => a + b.length, 0);
  const chunks = chunkBytes(encodeNdjson(lines));
  const js = new JsonPruner(PRUNE);
  const wasm = new WasmJsonPruner(PRUNE, scan);
  const walk = new WasmWalkPruner(PRUNE, scan);
  const kept = bytes.map((b) => js.prune(b));
  const keptBytes = kept.reduce((a, b) => a + b.length, 0);
  // Where the removed subtrees start (after `"managedFields":` / `"spec":` of the event's object), for the bare skip.
  const starts = bytes.map((b, i) => {
    const o = JSON.parse(lines[i]!) as { object: { metadata: { managedFields: unknown }; spec: unknown } };
    const mf = JSON.stringify(o.object.metadata.managedFields);
    const sp = JSON.stringify(o.object.spec);
    const s = lines[i]!;
    const a = s.indexOf(`"managedFields":${mf}`) + '"managedFields":'.length;
    const c = s.indexOf(`"spec":${sp}`) + '"spec":'.length;
    if (s.length !== b.length) return [] as number[]; // non-ASCII line: string offsets are not byte offsets; left out
    return [a, c];
  });
  let skippedBytes = 0;
  for (let i = 0; i < bytes.length; i++) {
    scan.load(bytes[i]!);
    for (const s of starts[i]!) skippedBytes += scan.skip(s) - s;
  }
  scan.resetCounts();
  for (const b of bytes) wasm.prune(b);
  const counts = scan.counts();

  const memoryStream = (cs: readonly Uint8Array[]) => {
    let i = 0;
    return new ReadableStream<Uint8Array>({ pull(c) { if (i < cs.length) c.enqueue(cs[i++]!); else c.close(); } });
  };
  type Line = { object: { metadata: { name: string } } };
  const verifySum = (id: string, sum: NameChecksum) => {
    if (sum.count !== events || sum.value !== checksum) throw new Error(`${id}: ${sum.count} events, checksum ${sum.value}; expected ${events}, ${checksum}`);
  };
  const verifyKept = (id: string, n: number) => {
    if (n !== keptBytes) throw new Error(`${id}: kept ${n} bytes, expected ${keptBytes}`);
  };
  const contenders: { id: string; label: string; bytes: number; run: () => Promise<void> | void }[] = [
    { id: "a", label: "(a) ceiling: `JSON.parse` of pre-split string lines", bytes: lineBytes, run: () => { const s = new NameChecksum(); for (const l of lines) s.add((JSON.parse(l) as Line).object.metadata.name); verifySum("a", s); } },
    { id: "b", label: "(b) JS pruner: line bytes → `JsonPruner.pruneToString` → `JSON.parse`", bytes: lineBytes, run: () => { const s = new NameChecksum(); for (const b of bytes) s.add((JSON.parse(js.pruneToString(b, td)) as Line).object.metadata.name); verifySum("b", s); } },
    { id: "c", label: "(c) WASM skip, JS walk: line bytes → copy into WASM memory → `WasmJsonPruner.pruneToString` → `JSON.parse`", bytes: lineBytes, run: () => { const s = new NameChecksum(); for (const b of bytes) s.add((JSON.parse(wasm.pruneToString(b, td)) as Line).object.metadata.name); verifySum("c", s); } },
    { id: "e", label: "(e) whole walk in WASM: line bytes → copy in → `WasmWalkPruner.pruneToString` (decoded from WASM memory) → `JSON.parse`", bytes: lineBytes, run: () => { const s = new NameChecksum(); for (const b of bytes) s.add((JSON.parse(walk.pruneToString(b, td)) as Line).object.metadata.name); verifySum("e", s); } },
    { id: "b2", label: "(b2) JS pruner in the decoder: 64 KiB chunks → `ndjsonValues({prune: JsonPruner})` (B1's (6))", bytes: lineBytes, run: async () => { const s = new NameChecksum(); for await (const v of ndjsonValues(memoryStream(chunks), { prune: js })) s.add((v as Line).object.metadata.name); verifySum("b2", s); } },
    { id: "c2", label: "(c2) WASM skip, JS walk, in the decoder: 64 KiB chunks → `ndjsonValues({prune: WasmJsonPruner})`", bytes: lineBytes, run: async () => { const s = new NameChecksum(); for await (const v of ndjsonValues(memoryStream(chunks), { prune: wasm })) s.add((v as Line).object.metadata.name); verifySum("c2", s); } },
    { id: "e2", label: "(e2) whole walk in WASM in the decoder: 64 KiB chunks → `ndjsonValues({prune: WasmWalkPruner})`", bytes: lineBytes, run: async () => { const s = new NameChecksum(); for await (const v of ndjsonValues(memoryStream(chunks), { prune: walk })) s.add((v as Line).object.metadata.name); verifySum("e2", s); } },
    { id: "dj", label: "(d) JS scanner alone: `JsonPruner.prune` walk + kept copy, no decode/parse", bytes: lineBytes, run: () => { let n = 0; for (const b of bytes) n += js.prune(b).length; verifyKept("dj", n); } },
    { id: "dw", label: "(d) WASM skip + JS walk alone: `WasmJsonPruner.prune` (copy in + walk + kept copy), no decode/parse", bytes: lineBytes, run: () => { let n = 0; for (const b of bytes) n += wasm.prune(b).length; verifyKept("dw", n); } },
    { id: "de", label: "(d) whole WASM walk alone: `WasmWalkPruner.prune` (copy in + walk + kept copy + slice out), no decode/parse", bytes: lineBytes, run: () => { let n = 0; for (const b of bytes) n += walk.prune(b).length; verifyKept("de", n); } },
    { id: "ds", label: "(d) bare WASM `skip` of the two removed subtrees per line (copy into WASM memory included)", bytes: skippedBytes, run: () => { let n = 0; for (let i = 0; i < bytes.length; i++) { scan.load(bytes[i]!); for (const s of starts[i]!) n += scan.skip(s) - s; } if (n !== skippedBytes) throw new Error("ds: skipped bytes differ"); } },
    { id: "f", label: "(f) floor: decode + `JSON.parse` of the already-pruned bytes (a free scan)", bytes: lineBytes, run: () => { const s = new NameChecksum(); for (const b of kept) s.add((JSON.parse(td.decode(b)) as Line).object.metadata.name); verifySum("f", s); } },
  ];
  const times = new Map<string, number[]>(contenders.map((c) => [c.id, []]));
  const loadBefore = os.loadavg()[0] ?? 0;
  const busy0 = machineBusySeconds();
  const cpu0 = process.cpuUsage();
  const w0 = performance.now();
  for (let round = 0; round <= runs; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const c = contenders[(k + round) % contenders.length]!;
      fullGc();
      const t = performance.now();
      await c.run();
      const ms = performance.now() - t;
      if (round > 0) times.get(c.id)!.push(ms);
    }
    console.error(`wasm-scan ${runtime}: round ${round}${round === 0 ? " (warm-up)" : ""} done`);
  }
  const wallSeconds = (performance.now() - w0) / 1000;
  // The differential check runs after the rounds, not before: its malformed and out-of-range
  // inputs would otherwise leave JsonPruner's JIT feedback polluted (out-of-bounds reads) and
  // slow down contender (b). A mismatch still fails the run (no result file is written).
  const check = differentialCheck(scan, lines);
  if (check.mismatches.length > 0) throw new Error(`WASM pruner differs from JsonPruner:\n${check.mismatches.join("\n")}`);
  console.error(`wasm-scan ${runtime}: check ${check.cases} cases, 0 mismatches, ${check.ms.toFixed(0)} ms`);
  const cpu = process.cpuUsage(cpu0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  const busy1 = machineBusySeconds();
  const noise: WasmScanResult["noise"] = { loadBefore, wallSeconds, cores: os.cpus().length };
  if (busy0 !== undefined && busy1 !== undefined) noise.otherCpuSeconds = Math.max(0, busy1 - busy0 - cpuSeconds);
  void t0;
  return {
    runtime, runtimeVersion: runtimeVersion(), date: new Date().toISOString(), events, lineBytes, keptBytes, skippedBytes, runs,
    wasm: { bytes: built.wasmBytes, buildMs: Math.round(built.buildMs), simdBlocks: counts.simdBlocks, scalarRuns: counts.scalarRuns },
    check: { cases: check.cases, ms: Math.round(check.ms) },
    contenders: contenders.map((c) => ({ id: c.id, label: c.label, runsMs: times.get(c.id)!.map((x) => Math.round(x * 10) / 10), medianMs: Math.round(median(times.get(c.id)!) * 10) / 10, bytes: c.bytes })),
    noise, cpuSeconds: Math.round(cpuSeconds * 10) / 10,
  };
}

// ------------------------------------------------------------------ report

const TITLE: Record<RuntimeName, string> = { node: "Node", deno: "Deno", bun: "Bun" };

export function renderReport(results: Partial<Record<RuntimeName, WasmScanResult>>): string {
  const s: string[] = [];
  const rts = (["node", "deno", "bun"] as const).filter((r) => results[r]);
  const ratio = (r: WasmScanResult, id: string) => { const a = r.contenders.find((c) => c.id === "a")!.medianMs; return a / r.contenders.find((c) => c.id === id)!.medianMs; };
  const ms = (r: WasmScanResult, id: string) => r.contenders.find((c) => c.id === id)!.medianMs;
  const gbs = (r: WasmScanResult, id: string) => { const c = r.contenders.find((x) => x.id === id)!; return c.bytes / c.medianMs / 1e6; };
  s.push("## B1-wasm — a WebAssembly SIMD structural scanner for the pruner: measured go/no-go");
  s.push("");
  s.push("<!-- generated by `node --import tsx bench/wasm-scan/wasm-scan.bench.ts --all` from bench/results/wasm-scan-*.json; hand-written part: bench/wasm-scan/notes.md -->");
  s.push("");
  const first = results[rts[0]!]!;
  s.push(`Run ${rts.map((r) => `${TITLE[r]} ${results[r]!.date.slice(0, 16).replace("T", " ")} UTC`).join(", ")}; ${first.events.toLocaleString("en-US")} events, ${(first.lineBytes / 1e6).toFixed(1)} MB of lines, ${(first.keptBytes / first.lineBytes * 100).toFixed(1)} % kept after pruning; ${first.runs} measured rounds after 1 warm-up, contenders rotated every round, medians; bytes in memory, no I/O.`);
  s.push("");
  s.push("Ratios are throughput vs the ceiling: (a)'s median time ÷ the contender's (> 1.00× = faster than `JSON.parse` of the pre-split lines).");
  s.push("");
  s.push(`| contender | ${rts.map((r) => `${TITLE[r]} ms | ×`).join(" | ")} |`);
  s.push(`|---|${rts.map(() => "---:|---:").join("|")}|`);
  for (const c of first.contenders) {
    if (c.id === "ds") continue;
    s.push(`| ${c.label} | ${rts.map((r) => `${ms(results[r]!, c.id).toFixed(0)} | ${ratio(results[r]!, c.id).toFixed(2)}×`).join(" | ")} |`);
  }
  s.push("");
  s.push(`| scan rate (GB/s) | ${rts.map((r) => TITLE[r]).join(" | ")} |`);
  s.push(`|---|${rts.map(() => "---:").join("|")}|`);
  s.push(`| JS walk (\`JsonPruner.prune\`), over the line bytes | ${rts.map((r) => gbs(results[r]!, "dj").toFixed(2)).join(" | ")} |`);
  s.push(`| WASM skip + JS walk (\`WasmJsonPruner.prune\`, copy into WASM memory included), over the line bytes | ${rts.map((r) => gbs(results[r]!, "dw").toFixed(2)).join(" | ")} |`);
  s.push(`| whole walk in WASM (\`WasmWalkPruner.prune\`, copies in and out included), over the line bytes | ${rts.map((r) => gbs(results[r]!, "de").toFixed(2)).join(" | ")} |`);
  s.push(`| bare WASM \`skip\` of managedFields + spec, over the skipped bytes (${(first.skippedBytes / 1e6).toFixed(1)} MB, ASCII lines) | ${rts.map((r) => gbs(results[r]!, "ds").toFixed(2)).join(" | ")} |`);
  s.push(`| speed-up over the JS walk: WASM skip + JS walk / whole walk in WASM | ${rts.map((r) => (ms(results[r]!, "dj") / ms(results[r]!, "dw")).toFixed(2) + "× / " + (ms(results[r]!, "dj") / ms(results[r]!, "de")).toFixed(2) + "×").join(" | ")} |`);
  s.push("");
  s.push("Machine noise and runs:");
  s.push("");
  for (const r of rts) {
    const x = results[r]!;
    const n = x.noise;
    const other = n.otherCpuSeconds === undefined ? "other processes' CPU unknown" : `other processes used ≈ ${n.otherCpuSeconds.toFixed(1)} CPU-s (${(n.otherCpuSeconds / (n.wallSeconds * n.cores) * 100).toFixed(0)} % of the ${n.cores} cores)`;
    const spread = x.contenders.map((c) => { const lo = Math.min(...c.runsMs), hi = Math.max(...c.runsMs); return `${c.id} ${lo.toFixed(0)}–${hi.toFixed(0)}`; }).join(", ");
    s.push(`- **${TITLE[r]}** (${x.runtimeVersion}): load ${n.loadBefore.toFixed(2)} before; ${other} during the ${n.wallSeconds.toFixed(0)} s of rounds. WASM module ${x.wasm.bytes} bytes, built from source in ${(x.wasm.buildMs / 1000).toFixed(1)} s; one pass of the WASM pruner over the lines: ${x.wasm.simdBlocks.toLocaleString("en-US")} 64-byte SIMD blocks, ${x.wasm.scalarRuns} scalar fallbacks; differential check ${x.check.cases.toLocaleString("en-US")} comparisons, 0 mismatches. Runs (min–max ms): ${spread}.`);
  }
  s.push("");
  const notes = join(REPO_ROOT, "bench", "wasm-scan", "notes.md");
  if (existsSync(notes)) s.push(readFileSync(notes, "utf8").trimEnd(), "");
  return s.join("\n");
}

function runAll(): number {
  const bin = join(REPO_ROOT, "node_modules", ".bin");
  const cmds: Record<RuntimeName, [string, string[]]> = {
    node: [process.execPath, ["--import", "tsx", "--expose-gc", "bench/wasm-scan/wasm-scan.bench.ts"]],
    deno: [join(bin, "deno"), ["run", "-A", "--v8-flags=--expose-gc", "bench/wasm-scan/wasm-scan.bench.ts"]],
    bun: [join(bin, "bun"), ["bench/wasm-scan/wasm-scan.bench.ts"]],
  };
  const only = (process.env.BENCH_RUNTIMES ?? "node,deno,bun").split(",") as RuntimeName[];
  for (const rt of only) {
    const [cmd, args] = cmds[rt];
    console.error(`wasm-scan: ---- ${rt}`);
    const r = spawnSync(cmd, args, { cwd: REPO_ROOT, stdio: "inherit", env: process.env });
    if (r.status !== 0) {
      console.error(`wasm-scan: ${rt} failed (exit ${r.status})`);
      return 1;
    }
  }
  return writeReport();
}

function writeReport(): number {
  const results: Partial<Record<RuntimeName, WasmScanResult>> = {};
  for (const rt of ["node", "deno", "bun"] as const) {
    const f = join(RESULTS, `wasm-scan-${rt}.json`);
    if (existsSync(f)) results[rt] = JSON.parse(readFileSync(f, "utf8")) as WasmScanResult;
  }
  writeFileSync(join(RESULTS, "B1-wasm.md"), renderReport(results) + "\n");
  console.error("wasm-scan: wrote bench/results/B1-wasm.md");
  return 0;
}

if (process.argv.includes("--all")) process.exit(runAll());
else if (process.argv.includes("--report")) process.exit(writeReport());
else {
  const r = await measure();
  writeFileSync(join(RESULTS, `wasm-scan-${runtime}.json`), JSON.stringify(r, null, 2) + "\n");
  for (const c of r.contenders) {
    const a = r.contenders.find((x) => x.id === "a")!.medianMs;
    console.log(`${runtime}\t${c.id}\t${c.medianMs.toFixed(1)} ms\t${(a / c.medianMs).toFixed(2)}×\t${(c.bytes / c.medianMs / 1e6).toFixed(2)} GB/s`);
  }
}
