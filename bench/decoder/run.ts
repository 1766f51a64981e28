/**
 * Benchmark driver (`npm run bench`, i.e. `node --import tsx bench/decoder/run.ts`).
 *
 * Starts one fake API server process (`bench/decoder/server.ts`), then runs
 * `bench/decoder/decoder.bench.ts` once per runtime, each in its own process, one
 * after the other: Node (`node --import tsx`), Deno (`deno run -A`) and Bun
 * (`bun`) — the `deno` and `bun` binaries are the ones `npx deno` / `npx bun`
 * would run, spawned directly so that the exact process can be stopped.
 * Collects `bench/results/<runtime>.json` and rewrites BENCHMARKS.md, keeping
 * its hand-written notes section (between the `notes:start` / `notes:end`
 * markers). The server and any running benchmark are stopped on exit, on
 * error and on Ctrl-C.
 *
 * Options (flags or env): `--events N` / BENCH_EVENTS (default 20,000 ≈ 100 MB),
 * `--runs N` / BENCH_RUNS (default 5), `--runtimes node,deno,bun` / BENCH_RUNTIMES,
 * `--no-write` (do not touch BENCHMARKS.md). After the B1 (decoding) section it
 * appends `bench/results/B1-wasm.md` (the WASM scanner go/no-go, `bench/wasm-scan/wasm-scan.bench.ts`), `B2.md` … `B5.md`, `B6.md` (latency, `bench/latency/latency.ts`), `B7.md` (memory per app, `bench/memory/report.ts`) and `B8.md` (cold start, `bench/cold-start/cold-start.mjs`) as they are (written by the other benchmarks), if present.
 * `--rerender` rebuilds BENCHMARKS.md from the last run's saved results
 * (`bench/results/{node,deno,bun,b1-run}.json`) without measuring: to pick up
 * new B2–B5 files or edited notes.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import process from "node:process";
import { join } from "node:path";
import { type BenchServer, REPO_ROOT, startBenchServer } from "./server-process.ts";
import { type ConsumerId, escapeCell, int, mb, ratio, runtimeTable, type RuntimeResult } from "./report.ts";

type RuntimeName = RuntimeResult["runtime"];
const ALL_RUNTIMES: RuntimeName[] = ["node", "deno", "bun"];
const TITLES: Record<RuntimeName, string> = { node: "Node", deno: "Deno", bun: "Bun" };

function option(flag: string, env: string): string | undefined {
  const i = process.argv.indexOf(flag);
  if (i >= 0) return process.argv[i + 1];
  const eq = process.argv.find((a) => a.startsWith(`${flag}=`));
  if (eq) return eq.slice(flag.length + 1);
  return process.env[env] || undefined;
}

function positiveInt(raw: string | undefined, fallback: number, what: string): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${what} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

const EVENTS = positiveInt(option("--events", "BENCH_EVENTS"), 20_000, "--events");
const RUNS = positiveInt(option("--runs", "BENCH_RUNS"), 5, "--runs");
const RUNTIMES = (option("--runtimes", "BENCH_RUNTIMES") ?? ALL_RUNTIMES.join(","))
  .split(",").map((s) => s.trim()).filter(Boolean) as RuntimeName[];
for (const r of RUNTIMES) if (!ALL_RUNTIMES.includes(r)) throw new Error(`unknown runtime ${r}`);
const WRITE = !process.argv.includes("--no-write");
/** Re-render BENCHMARKS.md from the last run's saved results (bench/results/*.json) without measuring again. */
const RERENDER = process.argv.includes("--rerender");

const BIN = join(REPO_ROOT, "node_modules", ".bin");
const IS_NODE = !("Deno" in globalThis) && !("Bun" in globalThis);
const RESULTS = join(REPO_ROOT, "bench", "results");
const BENCHMARKS_MD = join(REPO_ROOT, "BENCHMARKS.md");

function command(rt: RuntimeName): { cmd: string; args: string[]; shown: string } {
  switch (rt) {
    case "node":
      return {
        // Under `deno task bench` / `bun run bench` this driver is not Node itself: use `node` from PATH.
        cmd: IS_NODE ? process.execPath : "node",
        // appwatch as it ships (dist/, see bench/lib/shipped.mjs), not through tsx's keepNames.
        args: ["--import", "tsx", "--import", "./bench/lib/shipped.mjs", "--expose-gc", "bench/decoder/decoder.bench.ts"],
        shown: "node --import tsx --import ./bench/lib/shipped.mjs --expose-gc bench/decoder/decoder.bench.ts",
      };
    case "deno":
      return {
        cmd: join(BIN, "deno"),
        args: ["run", "-A", "--v8-flags=--expose-gc", "bench/decoder/decoder.bench.ts"],
        shown: "npx deno run -A --v8-flags=--expose-gc bench/decoder/decoder.bench.ts",
      };
    case "bun":
      return { cmd: join(BIN, "bun"), args: ["bench/decoder/decoder.bench.ts"], shown: "npx bun bench/decoder/decoder.bench.ts" };
  }
}

function versionOf(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.once("error", () => resolve("unavailable"));
    child.once("exit", () => resolve(out.split("\n")[0]?.trim() || "unavailable"));
  });
}

// ------------------------------------------------------------------ noise

/** Busy CPU seconds of the whole machine since boot (Linux /proc/stat), or undefined. */
function machineBusySeconds(): number | undefined {
  try {
    const first = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
    const f = first.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal …; guest time is already inside user/nice.
    const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
    return busy / 100; // USER_HZ
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used (Linux /proc/<pid>/stat), or undefined. */
function processCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime
  } catch {
    return undefined;
  }
}

/** How busy the machine was with other work while one runtime was measured. */
interface Noise {
  /** 1-minute load average just before the run. */
  loadBefore: number;
  wallSeconds: number;
  /** CPU seconds used by processes other than the benchmark, its server and this driver (Linux only). */
  otherCpuSeconds?: number;
}

function noiseText(n: Noise | undefined): string {
  if (!n) return "–";
  const cores = os.cpus().length;
  const other = n.otherCpuSeconds === undefined
    ? "other processes' CPU: unknown"
    : `other processes used ≈ ${n.otherCpuSeconds.toFixed(1)} CPU-s (${((n.otherCpuSeconds / (n.wallSeconds * cores)) * 100).toFixed(0)} % of the ${cores} cores)`;
  return `load ${n.loadBefore.toFixed(2)} before; ${other} during the ${n.wallSeconds.toFixed(0)} s run`;
}

let current: ChildProcess | undefined;

/** Runs one runtime's benchmark; resolves with its exit code and the tail of its stderr. */
function runOne(rt: RuntimeName, serverUrl: string): Promise<{ code: number; stderrTail: string }> {
  const { cmd, args } = command(rt);
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd: REPO_ROOT,
      stdio: ["ignore", "inherit", "pipe"],
      env: {
        ...process.env,
        BENCH_SERVER_URL: serverUrl,
        BENCH_RUNS: String(RUNS),
        BENCH_RESULT_FILE: join(RESULTS, `${rt}.json`),
        NO_COLOR: "1",
      },
    });
    current = child;
    let tail = "";
    child.stderr?.on("data", (d: Buffer) => {
      process.stderr.write(d);
      tail = (tail + d.toString("utf8")).slice(-4000);
    });
    child.once("error", (err) => {
      current = undefined;
      resolve({ code: 127, stderrTail: `${tail}\n${err.message}` });
    });
    child.once("exit", (code, signal) => {
      current = undefined;
      resolve({ code: code ?? (signal ? 128 : 1), stderrTail: tail });
    });
  });
}

// ------------------------------------------------------------------ report

/** From shared/reference/peer-baseline.md (same data shape, 20,000 events, 99.7 MB; Node 20.20.2, Bun 1.4.5, Deno 2.9.6). */
const PEER_BASELINE: Record<RuntimeName, { ceiling: number; fetchByteScan: number; clientNode: number; clientNode2?: number }> = {
  node: { ceiling: 80_804, fetchByteScan: 43_609, clientNode: 42_321 },
  bun: { ceiling: 135_859, fetchByteScan: 77_539, clientNode: 71_078, clientNode2: 68_212 },
  deno: { ceiling: 103_873, fetchByteScan: 55_406, clientNode: 49_550, clientNode2: 46_150 },
};

function failureLine(stderrTail: string): string {
  const lines = stderrTail.split("\n").map((l) => l.trim()).filter(Boolean);
  const failed = lines.find((l) => l.includes("BENCHMARK FAILED"));
  return escapeCell((failed ?? lines[lines.length - 1] ?? "no output").slice(0, 300));
}

const CONSUMER_SHORT: Record<ConsumerId, string> = {
  ceiling: "(1) ceiling",
  bytes: "(2) bytes in memory → `ndjsonValues`",
  fetch: "(3) appwatch `fetch` → `ndjsonValues`",
  reflector: "(4) appwatch `Reflector`",
  "bytes-pruned": "(6) bytes in memory, pruned",
  "fetch-pruned": "(7) appwatch `fetch`, pruned",
  "reflector-pruned": "(8) appwatch `Reflector`, pruned",
  "client-node": "(5) client-node 1.4.0 `Watch`",
  "client-node-2": "(9) client-node 2.0.1 `Watch`",
  "product-pruned": "(10) **product path**, pruned",
  "product-unpruned": "(11) **product path**, unpruned",
};

/** The peer each runtime is judged against: client-node 2.x where it runs (Deno, Bun), else 1.4.0. */
function peerOf(r: RuntimeResult | undefined): ConsumerId {
  return eps(r, "client-node-2") !== undefined ? "client-node-2" : "client-node";
}

function eps(r: RuntimeResult | undefined, id: ConsumerId): number | undefined {
  return r?.consumers.find((c) => c.id === id && c.status === "ok")?.eventsPerSec;
}

function combinedTable(results: Partial<Record<RuntimeName, RuntimeResult>>, runtimes: RuntimeName[]): string {
  const head = `| ratio (events/s) | ${runtimes.map((r) => TITLES[r]).join(" | ")} | peer-baseline.md (${runtimes.map((r) => TITLES[r]).join(" / ")}) |`;
  const rows = [head, `|---|${runtimes.map(() => "---:").join("|")}|---|`];
  const peer = (f: (p: (typeof PEER_BASELINE)[RuntimeName]) => number | undefined): string =>
    runtimes.map((r) => {
      const v = f(PEER_BASELINE[r]);
      return v === undefined ? "–" : v.toFixed(2);
    }).join(" / ");
  const line = (label: string, a: ConsumerId, b: ConsumerId, peerText: string) => {
    const cells = runtimes.map((rt) => {
      const r = results[rt];
      const x = eps(r, a);
      const y = eps(r, b);
      return x !== undefined && y !== undefined ? ratio(x / y) : "n/a";
    });
    rows.push(`| ${label} | ${cells.join(" | ")} | ${peerText} |`);
  };
  line(`${CONSUMER_SHORT.bytes} vs (1)`, "bytes", "ceiling", "–");
  line(`${CONSUMER_SHORT.fetch} vs (1)`, "fetch", "ceiling", `${peer((p) => p.fetchByteScan / p.ceiling)} (fetch + byte scan)`);
  line(`${CONSUMER_SHORT.reflector} vs (1)`, "reflector", "ceiling", "–");
  line(`${CONSUMER_SHORT["client-node"]} vs (1)`, "client-node", "ceiling", peer((p) => p.clientNode / p.ceiling));
  line("**(3) appwatch fetch vs (5) client-node**", "fetch", "client-node", peer((p) => p.fetchByteScan / p.clientNode));
  line("**(4) appwatch Reflector vs (5) client-node**", "reflector", "client-node", "–");
  line(`${CONSUMER_SHORT["client-node-2"]} vs (1)`, "client-node-2", "ceiling", peer((p) => p.clientNode2 === undefined ? undefined : p.clientNode2 / p.ceiling));
  line(`**${CONSUMER_SHORT["bytes-pruned"]} vs (1)**`, "bytes-pruned", "ceiling", "–");
  line(`**${CONSUMER_SHORT["fetch-pruned"]} vs (1)** (goal ≥ 1.0×)`, "fetch-pruned", "ceiling", "–");
  line(`**${CONSUMER_SHORT["reflector-pruned"]} vs (1)**`, "reflector-pruned", "ceiling", "–");
  const peerLine = (label: string, a: ConsumerId) => {
    const cells = runtimes.map((rt) => {
      const r = results[rt];
      const x = eps(r, a);
      const y = eps(r, peerOf(r));
      return x !== undefined && y !== undefined ? `${ratio(x / y)} (vs ${peerOf(r) === "client-node-2" ? "2.0.1" : "1.4.0"})` : "n/a";
    });
    rows.push(`| ${label} | ${cells.join(" | ")} | – |`);
  };
  peerLine("**(7) pruned fetch vs the peer** (goal ≥ 2×)", "fetch-pruned");
  peerLine("**(8) pruned Reflector vs the peer**", "reflector-pruned");
  const productOf = (r: RuntimeResult | undefined): ConsumerId => (r?.productPrunes === false ? "product-unpruned" : "product-pruned");
  {
    const cells = runtimes.map((rt) => {
      const r = results[rt];
      const x = eps(r, productOf(r));
      const y = eps(r, peerOf(r));
      const goal = rt === "node" ? 1.5 : 2;
      return x !== undefined && y !== undefined
        ? `**${ratio(x / y)}** (${productOf(r) === "product-pruned" ? "(10)" : "(11)"} vs ${peerOf(r) === "client-node-2" ? "2.0.1" : "1.4.0"}; ${x / y >= goal ? "met" : "missed"})`
        : "n/a";
    });
    rows.push(`| **the product path, as the product runs it, vs the peer** (goal ≥ 1.5× Node, ≥ 2× Deno and Bun) | ${cells.join(" | ")} | – |`);
  }
  peerLine("(10) product path pruned vs the peer", "product-pruned");
  peerLine("(11) product path unpruned vs the peer", "product-unpruned");
  line("**(10) product path pruned vs (11) unpruned** (the product prunes only where ≥ 1.0×)", "product-pruned", "product-unpruned", "–");
  line("(10) product path pruned vs (8) bare `Reflector` pruned", "product-pruned", "reflector-pruned", "–");
  line("(7) pruned fetch vs (3) unpruned fetch: what pruning gains", "fetch-pruned", "fetch", "–");
  line("(3) fetch vs (2) bytes in memory: the cost of the network", "fetch", "bytes", "–");
  line("(4) Reflector vs (3) fetch: the cost of validation + store + events", "reflector", "fetch", "–");
  const absolute = runtimes.map((rt) => {
    const v = eps(results[rt], "ceiling");
    return v === undefined ? "n/a" : int(v);
  });
  rows.push(`| ceiling (1), absolute events/s | ${absolute.join(" | ")} | ${runtimes.map((r) => int(PEER_BASELINE[r].ceiling)).join(" / ")} |`);
  return rows.join("\n");
}

/** Plain-language, number-driven reading, regenerated on every run. */
function reading(
  results: Partial<Record<RuntimeName, RuntimeResult>>,
  runtimes: RuntimeName[],
  noise: Partial<Record<RuntimeName, Noise>>,
): string {
  const out: string[] = [];
  for (const rt of runtimes) {
    const r = results[rt];
    if (!r) continue;
    const f = eps(r, "fetch");
    const cn = eps(r, "client-node");
    const rf = eps(r, "reflector");
    const ce = eps(r, "ceiling");
    const parts: string[] = [];
    if (f !== undefined && cn !== undefined) {
      const d = f / cn - 1;
      parts.push(
        `appwatch's decoder over \`fetch\` is ${Math.abs(d * 100).toFixed(0)} % ${d >= 0 ? "faster" : "slower"} than client-node's \`Watch\` ` +
          `(${ratio(f / cn)}; peer-baseline.md: ${ratio(PEER_BASELINE[rt].fetchByteScan / PEER_BASELINE[rt].clientNode)} for a plain fetch + byte scan)`,
      );
    } else {
      parts.push("no appwatch-vs-client-node comparison (a consumer was n/a)");
    }
    if (rf !== undefined && cn !== undefined) {
      const d = rf / cn - 1;
      parts.push(`the full Reflector is ${Math.abs(d * 100).toFixed(0)} % ${d >= 0 ? "faster" : "slower"} than client-node's bare \`Watch\` (${ratio(rf / cn)})`);
    }
    if (f !== undefined && ce !== undefined && cn !== undefined) {
      parts.push(
        `vs the ceiling: fetch ${ratio(f / ce)}, client-node ${ratio(cn / ce)} ` +
          `(peer-baseline.md: ${ratio(PEER_BASELINE[rt].fetchByteScan / PEER_BASELINE[rt].ceiling)} / ${ratio(PEER_BASELINE[rt].clientNode / PEER_BASELINE[rt].ceiling)})`,
      );
    }
    const fp = eps(r, "fetch-pruned");
    const rp = eps(r, "reflector-pruned");
    const pe = eps(r, peerOf(r));
    if (fp !== undefined && ce !== undefined && pe !== undefined) {
      const a = fp / ce;
      const b = fp / pe;
      parts.push(
        `**pruned** fetch: ${ratio(a)} the ceiling (goal ≥ 1.0×: ${a >= 1 ? "met" : "missed"}) and ${ratio(b)} client-node ${peerOf(r) === "client-node-2" ? "2.0.1" : "1.4.0"} ` +
          `(goal ≥ 2×: ${b >= 2 ? "met" : "missed"})` + (rp !== undefined ? `; pruned Reflector ${ratio(rp / ce)} the ceiling, ${ratio(rp / pe)} the peer` : ""),
      );
    }
    const pp = eps(r, "product-pruned");
    const pu = eps(r, "product-unpruned");
    const prod = r.productPrunes === false ? pu : pp;
    if (prod !== undefined && pe !== undefined) {
      const goal = rt === "node" ? 1.5 : 2;
      parts.push(
        `**product path** (${r.productPrunes === false ? "unpruned (11)" : "pruned (10)"}, the product's choice here): ${ratio(prod / pe)} client-node ` +
          `${peerOf(r) === "client-node-2" ? "2.0.1" : "1.4.0"} (goal ≥ ${goal}×: ${prod / pe >= goal ? "met" : "missed"})` +
          (pp !== undefined && pu !== undefined ? `; pruned ÷ unpruned ${ratio(pp / pu)}` : ""),
      );
    }
    const noisy = r.consumers.filter((c) =>
      c.status === "ok" && c.minEventsPerSec !== undefined && c.maxEventsPerSec !== undefined &&
      c.maxEventsPerSec / c.minEventsPerSec > 1.15
    ).map((c) => `(${CONSUMER_IDS_INDEX[c.id]})`);
    if (noisy.length) parts.push(`runs of ${noisy.join(", ")} spread more than 15 % (fastest vs slowest): read those ratios with care`);
    const n = noise[rt];
    if (n?.otherCpuSeconds !== undefined && n.otherCpuSeconds / (n.wallSeconds * os.cpus().length) > 0.1) {
      parts.push(`other processes took more than 10 % of the machine during this run (${noiseText(n)})`);
    }
    out.push(`- **${TITLES[rt]}**: ${parts.join("; ")}.`);
  }
  return out.join("\n");
}

const CONSUMER_IDS_INDEX: Record<ConsumerId, number> = {
  ceiling: 1,
  bytes: 2,
  fetch: 3,
  reflector: 4,
  "client-node": 5,
  "bytes-pruned": 6,
  "fetch-pruned": 7,
  "reflector-pruned": 8,
  "client-node-2": 9,
  "product-pruned": 10,
  "product-unpruned": 11,
};

const NOTES_START = "<!-- notes:start -->";
const NOTES_END = "<!-- notes:end -->";
const DEFAULT_NOTES = `${NOTES_START}
### Notes

(Hand-written interpretation goes here; \`bench/decoder/run.ts\` keeps this section when it rewrites the file.)
${NOTES_END}`;

function keptNotes(): string {
  if (!existsSync(BENCHMARKS_MD)) return DEFAULT_NOTES;
  const text = readFileSync(BENCHMARKS_MD, "utf8");
  const a = text.indexOf(NOTES_START);
  const b = text.indexOf(NOTES_END);
  return a >= 0 && b > a ? text.slice(a, b + NOTES_END.length) : DEFAULT_NOTES;
}

function renderMarkdown(
  results: Partial<Record<RuntimeName, RuntimeResult>>,
  failures: Partial<Record<RuntimeName, string>>,
  noise: Partial<Record<RuntimeName, Noise>>,
  versions: Record<string, string>,
  server: Pick<BenchServer, "meta">,
  wallMs: number,
  measuredAt: Date = new Date(),
): string {
  const any = RUNTIMES.map((r) => results[r]).find((r) => r !== undefined);
  const cpus = os.cpus();
  const date = measuredAt.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  const m = server.meta;
  const s: string[] = [];
  s.push("# Benchmarks");
  s.push("");
  s.push("<!-- Generated by `npm run bench` (bench/decoder/run.ts). Everything outside the notes section is rewritten on every run. -->");
  s.push("");
  const summary = join(RESULTS, "summary.md");
  if (existsSync(summary)) {
    s.push("<!-- from bench/results/summary.md (hand-written after the runs; kept as it is) -->");
    s.push(readFileSync(summary, "utf8").trimEnd());
    s.push("");
  }
  s.push(`## B1 — Watch decoding: ${int(m.events)} Knative Service events, ${mb(m.bytes)} MB`);
  s.push("");
  s.push(
    `One watch stream of ${int(m.events)} \`MODIFIED\` events (${int(m.bytes / m.events)} B each on average; ${m.nonAscii} objects, ` +
      `${((m.nonAscii / m.events) * 100).toFixed(1)} %, carry non-ASCII text), generated by \`bench/lib/data.ts\` ` +
      "(`flyte.org/*` labels and annotations incl. a base64 spec, 2–3 `managedFields`, a pod template, three conditions, traffic). " +
      "Eleven consumers, measured side by side in one process per runtime, on the same bytes:",
  );
  s.push("");
  s.push("1. **ceiling**: `JSON.parse` of pre-split string lines (each line decoded on its own), no I/O;");
  s.push("2. **ceiling with bytes**: the same bytes as 64 KiB chunks already in memory → `ndjsonValues` (our decoder, no network);");
  s.push("3. **appwatch**: `fetch` from the loopback server → `ndjsonValues`;");
  s.push("4. **appwatch Reflector end to end**: `new Reflector({initialList: \"paginated\"})` against the same server (an empty list page, then the watch stream), valibot validation, store updates, one output event per input event;");
  s.push("5. **peer**: `@kubernetes/client-node` 1.4.0 `new Watch(kc).watch(path, {}, cb, done)` (node-fetch + `readline`) on the same stream;");
  s.push("6. – 8. **pruned**: (2), (3) and (4) with byte-level pruning (`src/watch/prune.ts`): each line's `object.metadata.managedFields` and `object.spec` are cut out of the bytes before they are decoded and parsed — what `AppK8sClient` does, since a Flyte app never reads them (51 % of this stream's bytes);");
  s.push("9. **peer 2.x**: `@kubernetes/client-node` 2.0.1 (npm alias `@kubernetes/client-node-2`) the same way — on Deno and Bun only: it needs Node ≥ 22.19 and crashes at import on Node 20;");
  s.push("10. – 11. **the product path**: exactly what `AppK8sClient` runs for its KService watch — the client `createKubeClient` builds (this runtime's transport from `src/kube/transport.ts`: on Node undici's `dispatcher.request` behind a `Response`, on Deno and Bun their `fetch`), the watcher options of `kserviceWatcherOptions` (label selector; `slimKService` parse only with a caller's own prune) — with pruning (10) and without (11); the product runs (10) on every runtime (`src/flyte/kservices.ts`). `initialList: \"paginated\"` (the bench server serves a plain watch, not a streaming list).");
  s.push("");
  s.push("The B1 goals (issue 6): pruned fetch (7) ≥ 1.0× the ceiling (1), and ≥ 2× client-node (1.4.0 on Node, 2.0.1 on Deno and Bun). " +
    "Issue 16: the product path (10 or 11, whichever the product runs there) ≥ 1.5× client-node 1.4.0's bare `Watch` on Node and ≥ 2× client-node 2.0.1 on Deno and Bun, and never slower with pruning than without (the product prunes only where (10) ÷ (11) ≥ 1.0×).");
  s.push("");
  s.push(
    "The server is a separate Node process (`bench/decoder/server.ts`, the same for every consumer runtime) that writes the pre-generated stream " +
      "as one chunked response in 64 KiB writes, with backpressure. Every run of every consumer is checked to have received all " +
      "events (count + an order-sensitive checksum over the names) — a mismatch fails the benchmark. Each consumer callback does the same " +
      "work: read `object.metadata.name` and add it to the checksum. " +
      `One warm-up round, then ${RUNS} measured rounds; within a round the consumers run one after the other, in an order rotated every round; ` +
      "a full GC is forced before every run (`--expose-gc` / `Bun.gc(true)`); the tables show medians. events/s = events ÷ median run time; MB = 10⁶ bytes.",
  );
  s.push("");
  s.push("**Machine and runtimes**");
  s.push("");
  s.push(`- date: ${date}; whole \`npm run bench\` wall time: ${(wallMs / 1000).toFixed(0)} s`);
  s.push(`- ${any?.machine.cores ?? cpus.length} cores (${any?.machine.cpu ?? cpus[0]?.model.trim() ?? "?"}), ${any?.machine.memoryGiB ?? Math.round(os.totalmem() / 2 ** 30)} GiB RAM, ${any?.machine.platform ?? os.platform()}; server and consumer share the cores`);
  for (const rt of RUNTIMES) {
    const r = results[rt];
    s.push(`- ${TITLES[rt]}: ${r?.runtimeVersion ?? versions[rt] ?? "?"} — \`${command(rt).shown}\``);
  }
  s.push(`- server: ${versions.server} (\`node --import tsx bench/decoder/server.ts\`)`);
  s.push(
    "- machine noise (the cores are shared with whatever else runs; busy-time accounting from /proc, approximate): " +
      RUNTIMES.map((rt) => `${TITLES[rt]}: ${noiseText(noise[rt])}`).join("; "),
  );
  s.push("");
  s.push("### Ratios, all runtimes");
  s.push("");
  s.push(
    "Ratios of events/s measured in the same run: the numbers to compare. Absolute numbers move ±15 % between runs on this kind of " +
      "machine (peer-baseline.md), so compare the peer-baseline column by ratio only.",
  );
  s.push("");
  s.push(combinedTable(results, RUNTIMES));
  s.push("");
  for (const rt of RUNTIMES) {
    const r = results[rt];
    s.push(`### ${TITLES[rt]}: ${r?.runtimeVersion ?? versions[rt] ?? ""}`);
    s.push("");
    if (r) s.push(runtimeTable(r));
    else s.push(`**Failed**: ${failures[rt] ?? "no result"}`);
    s.push("");
  }
  s.push("### Reading (generated from the numbers above)");
  s.push("");
  s.push(reading(results, RUNTIMES, noise));
  s.push("");
  s.push(keptNotes()); // B1's hand-written notes, right after its tables
  s.push("");
  for (const part of ["B1-wasm", "B2", "B3", "B4", "B5", "B6", "B7", "B8"]) {
    const file = join(RESULTS, `${part}.md`);
    if (!existsSync(file)) continue;
    s.push(`<!-- from bench/results/${part}.md (rewritten on every run) -->`);
    s.push(readFileSync(file, "utf8").trimEnd());
    s.push("");
  }
  return s.join("\n");
}

// ------------------------------------------------------------------ main

/** Everything besides the per-runtime results that the Markdown needs: saved so that `--rerender` can rebuild it. */
interface SavedRun {
  meta: BenchServer["meta"];
  failures: Partial<Record<RuntimeName, string>>;
  noise: Partial<Record<RuntimeName, Noise>>;
  versions: Record<string, string>;
  wallMs: number;
  runtimes: RuntimeName[];
  runs: number;
  /** ISO time the measurements ended. */
  date: string;
}
const SAVED_RUN = join(RESULTS, "b1-run.json");

function rerender(): number {
  if (!existsSync(SAVED_RUN)) {
    console.error(`bench: --rerender needs ${SAVED_RUN} from a previous run`);
    return 1;
  }
  const saved = JSON.parse(readFileSync(SAVED_RUN, "utf8")) as SavedRun;
  if (saved.runs !== RUNS || saved.runtimes.join() !== RUNTIMES.join()) {
    console.error(`bench: --rerender: pass the same --runs/--runtimes as the saved run (${saved.runs}, ${saved.runtimes.join(",")})`);
    return 1;
  }
  const results: Partial<Record<RuntimeName, RuntimeResult>> = {};
  for (const rt of RUNTIMES) {
    const file = join(RESULTS, `${rt}.json`);
    if (existsSync(file)) results[rt] = JSON.parse(readFileSync(file, "utf8")) as RuntimeResult;
  }
  writeFileSync(BENCHMARKS_MD, renderMarkdown(results, saved.failures, saved.noise, saved.versions, { meta: saved.meta }, saved.wallMs, new Date(saved.date)));
  console.error(`bench: re-rendered ${BENCHMARKS_MD} from the saved run`);
  return 0;
}

async function main(): Promise<number> {
  if (RERENDER) return rerender();
  const t0 = performance.now();
  const versions: Record<string, string> = {
    node: IS_NODE ? `Node ${process.version.slice(1)}` : `Node ${(await versionOf("node", ["--version"])).replace(/^v/, "")}`,
    deno: await versionOf(join(BIN, "deno"), ["--version"]),
    bun: `Bun ${await versionOf(join(BIN, "bun"), ["--version"])}`,
    server: "",
  };
  versions.server = versions.node!;
  console.error(`bench: ${EVENTS} events, ${RUNS} runs, runtimes ${RUNTIMES.join(", ")}; starting the server…`);
  const server = await startBenchServer(EVENTS);
  const stopAll = () => {
    current?.kill("SIGKILL");
    void server.close();
  };
  const onSignal = (sig: NodeJS.Signals) => {
    console.error(`bench: ${sig}, stopping`);
    stopAll();
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const results: Partial<Record<RuntimeName, RuntimeResult>> = {};
  const failures: Partial<Record<RuntimeName, string>> = {};
  const noise: Partial<Record<RuntimeName, Noise>> = {};
  try {
    console.error(`bench: server ${server.meta.url} (pid ${server.meta.pid}): ${int(server.meta.events)} events, ${mb(server.meta.bytes)} MB, generated in ${server.meta.generateMs} ms`);
    for (const rt of RUNTIMES) {
      const file = join(RESULTS, `${rt}.json`);
      rmSync(file, { force: true }); // never report a previous run's numbers
      console.error(`\nbench: ---- ${TITLES[rt]}: ${command(rt).shown}`);
      const busy0 = machineBusySeconds();
      const srv0 = processCpuSeconds(server.meta.pid);
      const self0 = process.cpuUsage();
      const loadBefore = os.loadavg()[0] ?? 0;
      const w0 = performance.now();
      const { code, stderrTail } = await runOne(rt, server.meta.url);
      const wallSeconds = (performance.now() - w0) / 1000;
      const busy1 = machineBusySeconds();
      const srv1 = processCpuSeconds(server.meta.pid);
      const self1 = process.cpuUsage(self0);
      noise[rt] = { loadBefore, wallSeconds };
      if (code === 0 && existsSync(file)) {
        const r = JSON.parse(readFileSync(file, "utf8")) as RuntimeResult;
        if (busy0 !== undefined && busy1 !== undefined && srv0 !== undefined && srv1 !== undefined && r.cpuSeconds !== undefined) {
          const ours = r.cpuSeconds + (srv1 - srv0) + (self1.user + self1.system) / 1e6;
          noise[rt]!.otherCpuSeconds = Math.max(0, busy1 - busy0 - ours);
        }
        console.error(`bench: ${TITLES[rt]}: ${noiseText(noise[rt])}`);
        if (r.events !== server.meta.events || r.bytes !== server.meta.bytes) {
          failures[rt] = `result file does not match the server's stream (${r.events} events, ${r.bytes} bytes)`;
        } else {
          results[rt] = r;
        }
      } else {
        failures[rt] = `exit code ${code}: ${failureLine(stderrTail)}`;
      }
      if (failures[rt]) console.error(`bench: ${TITLES[rt]} FAILED — ${failures[rt]}`);
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await server.close();
  }
  const wallMs = performance.now() - t0;
  console.log(`\n## Ratios, all runtimes\n\n${combinedTable(results, RUNTIMES)}\n`);
  console.log(reading(results, RUNTIMES, noise));
  console.log(`\nbench: done in ${(wallMs / 1000).toFixed(0)} s`);
  const saved: SavedRun = { meta: server.meta, failures, noise, versions, wallMs, runtimes: RUNTIMES, runs: RUNS, date: new Date().toISOString() };
  writeFileSync(SAVED_RUN, JSON.stringify(saved, null, 2) + "\n");
  if (WRITE) {
    writeFileSync(BENCHMARKS_MD, renderMarkdown(results, failures, noise, versions, server, wallMs));
    console.error(`bench: wrote ${BENCHMARKS_MD}`);
  }
  const failed = Object.keys(failures);
  if (failed.length) {
    console.error(`bench: FAILED on ${failed.join(", ")}`);
    return 1;
  }
  return 0;
}

process.exitCode = await main().catch((err: unknown) => {
  console.error(`bench: FAILED: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
  return 1;
});
