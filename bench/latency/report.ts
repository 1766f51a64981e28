/**
 * B6 report: bench/results/B6.md from bench/results/latency.json (written by `bench/latency/latency.ts`;
 * re-render alone with `node --import tsx bench/latency/report.ts`).
 *
 * Per (source, rate, runtime): p50 and p99 of write → receive over every delivered event of every
 * subscriber, for appwatch WebSocket, SSE and Connect, and each ÷ its peer: the relay's WebSocket
 * (for WebSocket and Connect; the relay has no Connect) or the relay's SSE (for SSE). When a cell
 * ran more than once (`--reps`), the median of its runs is used.
 * @module
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

interface Cell {
  source: string;
  runtime: string;
  contender: string;
  transport: string;
  rate: number;
  p50: number;
  p99: number;
  lost: number;
  expected: number;
  received: number;
  achievedRate: number;
  writesFailed: number;
  writeMs?: { p50: number; p99: number };
  contenderCpuCores: number;
  loadCpuCores: number;
  sourceCpuCores: number;
  driverCpuCores: number;
  otherCpuCores: number;
  loadavg1Before: number;
  subscribers: number;
  watchP50?: number;
  watchP99?: number;
}

/** The p99 goal stated for B6 (the issue gives none): appwatch's p99 ≤ 1.5 × the relay's. */
export const B6_P99_GOAL = 1.5;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const ms = (x: number) => (Number.isFinite(x) ? (x < 10 ? x.toFixed(2) : x.toFixed(1)) : "–");
const x = (v: number) => (Number.isFinite(v) ? `${v.toFixed(2)}×` : "–");

export function writeB6(dir: string, file = join(dir, "latency.json")): void {
  // deno-lint-ignore no-explicit-any
  const r = JSON.parse(readFileSync(file, "utf8")) as any;
  const cells = r.cells as Cell[];
  // Follow-up runs (`--out bench/results/latency-<tag>.json`, e.g. the real apiserver at lower
  // rates) are appended as sources of their own, `<source> (<tag>)`, with their own date and noise.
  const extras: string[] = [];
  for (const f of readdirSync(dir).filter((n) => /^latency-.+\.json$/.test(n)).sort()) {
    const tag = f.slice("latency-".length, -".json".length);
    // deno-lint-ignore no-explicit-any
    const e = JSON.parse(readFileSync(join(dir, f), "utf8")) as any;
    for (const [k, v] of Object.entries(e.sources as Record<string, string>)) {
      const name = `${k} (${tag})`;
      r.sources[name] = `${v} — a follow-up run (${f}), ${e.date}, ${e.options.subscribers} subscribers, ${e.options.seconds} s per cell (${warmupText(e.options.warmupSeconds)}), runtimes ${e.options.runtimes.join(", ")}, load average before ${e.loadavgAtStart.map((x: number) => x.toFixed(2)).join(" ")}`;
      (r.sourceRates ??= {})[name] = e.sourceRates?.[k] ?? e.options.rates;
    }
    for (const c of e.cells as Cell[]) cells.push({ ...c, source: `${c.source} (${tag})` });
    extras.push(f);
  }
  const pick = (source: string, runtime: string, contender: string, transport: string, rate: number) =>
    cells.filter((c) => c.source === source && c.runtime === runtime && c.contender === contender && c.transport === transport && c.rate === rate);
  const stat = (cs: Cell[], f: (c: Cell) => number) => median(cs.map(f));
  const out: string[] = [];
  out.push("## B6 latency: API server write → client receive");
  out.push("");
  out.push(
    `Run ${r.date} (${r.totalSeconds.toFixed(0)} s), ${r.machine.cores} cores (${r.machine.cpu}), ${r.machine.memoryGiB} GiB, ${r.machine.platform}; ` +
      `load average before ${r.loadavgAtStart.map((v: number) => v.toFixed(2)).join(" ")}, after ${r.loadavgAtEnd.map((v: number) => v.toFixed(2)).join(" ")}. ` +
      `${r.options.subscribers} subscribers per contender (B3 mix: 4 all-apps, every 20th per project+domain, the rest per app over ${r.options.apps} apps), ` +
      `${r.options.seconds} s of writes per cell (${warmupText(r.options.warmupSeconds)}), round-robin over the apps; load process ${r.loadRuntime}. Command: \`npm run bench:latency\` ` +
      "(`node --import tsx bench/latency/latency.ts`), under `flock /tmp/appwatch-bench.lock`.",
  );
  out.push("");
  out.push("Sources:");
  for (const [k, v] of Object.entries(r.sources as Record<string, string>)) out.push(`- **${k}**: ${v}.`);
  out.push("");
  out.push(
    "Latency per event = the load process's receive time − the write time stamped into the KService's Ready condition message (`bench t=<µs> s=<seq>`, " +
      "which appwatch carries into the App's `status.conditions[].message`); both clocks are `performance.timeOrigin + performance.now()` of processes on this one machine. " +
      "Percentiles over every delivered event of every subscriber. " +
      "Peer: a minimal relay per runtime (`bench/latency/relay.ts`): client-node's informer (1.4.0 on Node, 2.0.1 on Deno/Bun) → the object's JSON to the subscribers of its app " +
      "(Node `ws`, Deno `Deno.upgradeWebSocket`, Bun `server.publish`; SSE: the same relay writing `data:` records). appwatch WebSocket and Connect are ÷ the relay's WebSocket, " +
      "SSE ÷ the relay's SSE. One contender process at a time watches the source; appwatch and relay alternate which goes first per (source, runtime) block. " +
      `Stated goal (the issue gives no number): p99 ≤ ${B6_P99_GOAL}× the relay's.`,
  );
  out.push("");
  for (const source of Object.keys(r.sources)) {
    for (const rate of (r.sourceRates?.[source] ?? r.options.rates) as number[]) {
      const rows: string[] = [];
      for (const runtime of r.options.runtimes as string[]) {
        const relayWs = pick(source, runtime, "relay", "ws", rate);
        const relaySse = pick(source, runtime, "relay", "sse", rate);
        const line: string[] = [runtime];
        let any = false;
        line.push(relayWs.length ? `${ms(stat(relayWs, (c) => c.p50))} / ${ms(stat(relayWs, (c) => c.p99))}` : "–");
        for (const t of ["ws", "sse", "connect"]) {
          const a = pick(source, runtime, "appwatch", t, rate);
          const peer = t === "sse" ? relaySse : relayWs;
          if (!a.length) {
            line.push("–", "–");
            continue;
          }
          any = true;
          const p99r = stat(a, (c) => c.p99) / stat(peer, (c) => c.p99);
          const p50r = stat(a, (c) => c.p50) / stat(peer, (c) => c.p50);
          const met = Number.isFinite(p99r) ? (p99r <= B6_P99_GOAL ? " ✓" : " ✗") : "";
          line.push(`${ms(stat(a, (c) => c.p50))} / ${ms(stat(a, (c) => c.p99))}`, `${x(p50r)} / **${x(p99r)}**${met}`);
        }
        line.splice(4, 0, relaySse.length ? `${ms(stat(relaySse, (c) => c.p50))} / ${ms(stat(relaySse, (c) => c.p99))}` : "–");
        if (any || relayWs.length) rows.push(`| ${line.join(" | ")} |`);
      }
      if (!rows.length) continue;
      const achieved = cells.filter((c) => c.source === source && c.rate === rate);
      out.push(`### ${source}, ${rate} changes/s (achieved ${Math.round(median(achieved.map((c) => c.achievedRate)))}/s median, min ${Math.round(Math.min(...achieved.map((c) => c.achievedRate)))}/s)`);
      out.push("");
      out.push("p50 / p99 in ms; ratios appwatch ÷ relay (p50 / **p99**).");
      out.push("");
      out.push("| runtime | relay WS | appwatch WS | WS ÷ relay WS | relay SSE | appwatch SSE | SSE ÷ relay SSE | appwatch Connect | Connect ÷ relay WS |");
      out.push("|---|---|---|---|---|---|---|---|---|");
      out.push(...rows);
      out.push("");
    }
  }
  out.push("### Reading (generated from the numbers above)");
  out.push("");
  {
    let met = 0;
    let all = 0;
    const missed: string[] = [];
    for (const source of Object.keys(r.sources)) {
      for (const rate of (r.sourceRates?.[source] ?? r.options.rates) as number[]) {
        for (const runtime of r.options.runtimes as string[]) {
          for (const t of ["ws", "sse", "connect"]) {
            const a = pick(source, runtime, "appwatch", t, rate);
            const peer = pick(source, runtime, "relay", t === "sse" ? "sse" : "ws", rate);
            const ratio = stat(a, (c) => c.p99) / stat(peer, (c) => c.p99);
            if (!Number.isFinite(ratio)) continue;
            all++;
            if (ratio <= B6_P99_GOAL) met++;
            else missed.push(`${source} ${rate}/s ${runtime} ${t} ${x(ratio)}`);
          }
        }
      }
    }
    out.push(`- p99 goal (≤ ${B6_P99_GOAL}× the relay's) met in ${met} of ${all} cells with both contenders measured; missed: ${missed.join("; ") || "none"}.`);
    const probed = cells.filter((c) => c.contender === "appwatch" && c.watchP99 !== undefined && Number.isFinite(c.watchP99) && c.p99 > 0);
    const share = median(probed.map((c) => c.watchP99! / c.p99));
    out.push(
      `- Where appwatch's tail comes from: its in-process watch-path probe (an all-apps subscription in the same process, no transport) has a p99 of ${(share * 100).toFixed(0)} % of the delivered p99 (median over ${probed.length} cells). ` +
        "The probe shares the one JS thread with the transports, so on the sandbox (whose process stays at ≤ 0.5 core, and whose relay cells show what the source itself adds) a late probe means appwatch's thread was busy (decoding, converting, encoding and writing frames for the other subscribers): the tail is queueing on appwatch's thread, and it grows with the CPU each event costs there. On the real apiserver the probe also holds the apiserver's own queueing.",
    );
    const cpu = (runtime: string, contender: string, t: string) => stat(pick("sandbox", runtime, contender, t, 1000), (c) => c.contenderCpuCores);
    const rows = (r.options.runtimes as string[]).map((rt) =>
      `${rt} WS ${x(cpu(rt, "appwatch", "ws") / cpu(rt, "relay", "ws"))}, SSE ${x(cpu(rt, "appwatch", "sse") / cpu(rt, "relay", "sse"))}, Connect ${x(cpu(rt, "appwatch", "connect") / cpu(rt, "relay", "ws"))} (÷ relay WS)`
    );
    out.push(`- CPU of the contender process at 1,000 changes/s on the sandbox, appwatch ÷ relay: ${rows.join("; ")}. A contender near 1 core (one JS thread saturated) cannot keep up and its latency becomes a backlog (Connect at 1,000/s).`);
    for (const [k, v] of Object.entries((r.capacities ?? {}) as Record<string, number>)) {
      const src = cells.filter((c) => c.source === k);
      out.push(
        `- The ${k} source sustained ${Math.round(v)} writes/s here (calibration at a 1,000/s target), and kube-apiserver + etcd used ${median(src.map((c) => c.sourceCpuCores)).toFixed(2)} cores (median) at ${(r.sourceRates?.[k] ?? []).join(" and ")}/s: ` +
          "the API server is this machine's bottleneck well below 1,000/s, its write RTT and watch delivery queue, and the cells' tails mostly measure that queueing (the writer's achieved rate and RTT are in the table below). Real-source ratios are noisy for that reason; the sandbox ratios are the ones that isolate the watchers.",
      );
    }
    const dead = cells.filter((c) => c.contender === "relay" && c.received === 0 && c.expected > 0);
    if (dead.length) {
      out.push(
        `- Missing: ${[...new Set(dead.map((c) => `${c.source} ${c.runtime}`))].join(", ")} relay: it received nothing (client-node 2.0.1 on Bun did not trust the kubeconfig's certificate-authority-data: "unable to verify the first certificate"). ` +
          (cells.some((c) => c.source.startsWith("real (") && c.runtime === "bun" && c.contender === "relay" && c.received > 0)
            ? "`bench/latency/latency.ts` now gives the contenders `NODE_EXTRA_CA_CERTS` with the test CA; the follow-up run `real (real-bun)` has them."
            : "`bench/latency/latency.ts` now gives the contenders `NODE_EXTRA_CA_CERTS` with the test CA (verified to make Bun trust it); a follow-up run `--sources real --runtimes bun --out bench/results/latency-real-bun.json` fills these cells."),
      );
    }
  }
  out.push(
    "- Profile (V8, appwatch on Node, sandbox, 1,000 changes/s, 1,000 subscribers; a separate run on 2026-12-02 05:24 UTC under the bench lock: " +
      "`BENCH_B6_CPU_PROF_DIR=/tmp/p node --import tsx bench/latency/latency.ts --sources sandbox --runtimes node --transports ws,connect --rates 1000 --out /tmp/p.json`, " +
      "which reproduced WS p99 97.3 ms vs the relay's 10.4 ms and Connect p50 573 ms). " +
      "Connect cell: the main thread has no idle time (1.09 cores); 27 % inclusive in connect-es `serialize` (protobuf-es `toJsonString`/`toJson`, once per subscriber per event, of a ~5 KB App), " +
      "~37 % in connect-es's async-iterable plumbing per message, 11 % GC, 7 % `watchMessage` (`fromJson`, once per event): per-subscriber serialization saturates the one thread, so events queue (a backlog, not a tail). " +
      "WebSocket cell: the thread is 33 % idle over the cell but busy in bursts: 27 % inclusive in the session `#pump` per subscriber, 18 % in `ws` `send`, 11 % self in `writev` (one syscall per frame per socket), " +
      "10 % in the watch decode (reflector/ndjson/prune), 5 % in frame encoding, 3 % in `kserviceToApp`; the relay writes one pre-encoded buffer per topic per event with no per-subscriber session.",
  );
  out.push("");
  out.push("### Every cell");
  out.push("");
  out.push("| source | rate | runtime | contender | transport | p50 ms | p99 ms | watch path p50 / p99 ms | received / expected | lost | writes/s | write RTT p50/p99 ms | CPU contender | load | source | writer | other | loadavg before |");
  out.push("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (const c of cells) {
    out.push(
      `| ${c.source} | ${c.rate} | ${c.runtime} | ${c.contender} | ${c.transport} | ${ms(c.p50)} | ${ms(c.p99)} | ${c.watchP50 !== undefined ? `${ms(c.watchP50)} / ${ms(c.watchP99 ?? NaN)}` : "–"} | ${c.received} / ${c.expected} | ${c.lost} | ${Math.round(c.achievedRate)}${c.writesFailed ? ` (${c.writesFailed} failed)` : ""} | ` +
        `${c.writeMs ? `${ms(c.writeMs.p50)} / ${ms(c.writeMs.p99)}` : "–"} | ${c.contenderCpuCores.toFixed(2)} | ${c.loadCpuCores.toFixed(2)} | ${c.sourceCpuCores.toFixed(2)} | ${c.driverCpuCores.toFixed(2)} | ${c.otherCpuCores.toFixed(2)} | ${c.loadavg1Before.toFixed(2)} |`,
    );
  }
  out.push("");
  out.push(
    "Watch path: appwatch only, an in-process all-apps subscription of the same process (write → decode → convert → AppK8sClient publish, no transport), as B3's probe; " +
      "what is above it is the transport's share (session, frame encoding, socket writes) and the load process's receive. " +
      "CPU columns are cores over the cell (drive + drain): the contender process, the load process, the source (the sandbox process; kube-apiserver + etcd), " +
      "the writer (this driver; it writes to the real apiserver) and everything else on the machine (other users of the 2 cores).",
  );
  out.push("");
  writeFileSync(join(dir, "B6.md"), out.join("\n"));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeB6(join(fileURLToPath(new URL("..", import.meta.url)), "results"));
}

/** How a run warmed each contender process up (runs before `--warmup` existed had none). */
function warmupText(seconds: number | undefined): string {
  return seconds ? `after a discarded ${seconds} s warm-up cell per process (since 2026-12-07 12:40 UTC: per process and transport)` : "no warm-up: a fresh process's first cell included its JIT warm-up";
}
