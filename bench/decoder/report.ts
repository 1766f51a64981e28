/**
 * The result format of `decoder.bench.ts` (one JSON file per runtime under
 * `bench/results/`) and the Markdown tables printed from it.
 * @module
 */

/** The consumers, in table order. */
export const CONSUMER_IDS = [
  "ceiling",
  "bytes",
  "fetch",
  "reflector",
  "bytes-pruned",
  "fetch-pruned",
  "reflector-pruned",
  "client-node",
  "client-node-2",
  "product-pruned",
  "product-unpruned",
] as const;
/** One of {@link CONSUMER_IDS}. */
export type ConsumerId = (typeof CONSUMER_IDS)[number];

/** What one consumer measured on one runtime. */
export interface ConsumerResult {
  id: ConsumerId;
  /** Table label, e.g. "(3) appwatch: fetch → ndjsonValues". */
  label: string;
  status: "ok" | "n/a";
  /** Why the consumer could not run (status "n/a"). */
  reason?: string;
  /** Milliseconds of each measured run, in run order. */
  runsMs: number[];
  /** Milliseconds of the warm-up run. */
  warmupMs?: number;
  medianMs?: number;
  eventsPerSec?: number;
  mbPerSec?: number;
  /** Slowest and fastest measured run, in events/s. */
  minEventsPerSec?: number;
  maxEventsPerSec?: number;
  /** eventsPerSec / eventsPerSec of the ceiling (1). */
  vsCeiling?: number;
}

/** One runtime's full result file. */
export interface RuntimeResult {
  runtime: "node" | "deno" | "bun";
  /** e.g. "Node 20.20.2 (V8 11.3…)". */
  runtimeVersion: string;
  date: string;
  machine: { cores: number; cpu: string; memoryGiB: number; platform: string };
  events: number;
  bytes: number;
  nonAsciiEvents: number;
  /** Measured runs per consumer (after one warm-up run). */
  runs: number;
  /** Whether a full GC was forced before every run. */
  gcBetweenRuns: boolean;
  consumers: ConsumerResult[];
  ratios: {
    /** (3) / (5), events/s. */
    fetchVsClientNode?: number;
    /** (4) / (5), events/s. */
    reflectorVsClientNode?: number;
    /** (3) / (2): what the network costs our decoder. */
    fetchVsBytes?: number;
    /** (7) pruned fetch / the peer (client-node 2.x where it runs, else 1.4.0). */
    prunedFetchVsPeer?: number;
    /** (8) pruned Reflector / the peer. */
    prunedReflectorVsPeer?: number;
    /** The product path as the product runs it on this runtime ((10) or (11), per {@link RuntimeResult.productPrunes}) / the peer. */
    productVsPeer?: number;
    /** (10) product path with pruning / the peer. */
    productPrunedVsPeer?: number;
    /** (11) product path without pruning / the peer. */
    productUnprunedVsPeer?: number;
    /** (10) / (11): what pruning does to the product path (≥ 1: pruning is not slower). */
    productPrunedVsUnpruned?: number;
  };
  /** Whether the product (`kserviceWatcherOptions`: on every runtime) prunes on this runtime: which of (10)/(11) is "the product path". */
  productPrunes?: boolean;
  /** Wall time of the whole benchmark process body, ms. */
  totalMs: number;
  /** CPU time (user + system) this benchmark process used, seconds. */
  cpuSeconds?: number;
}

/** A number with thousands separators, e.g. 43,609. */
export function int(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/** A ratio as "0.54×". */
export function ratio(n: number | undefined): string {
  return n === undefined ? "n/a" : `${n.toFixed(2)}×`;
}

/** Megabytes (10^6 bytes), one decimal. */
export function mb(bytes: number): string {
  return (bytes / 1e6).toFixed(1);
}

/** Median of a non-empty list. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The per-runtime Markdown table (what `decoder.bench.ts` prints). */
export function runtimeTable(r: RuntimeResult): string {
  const rows = [
    "| consumer | median ms | events/s | MB/s | runs (min–max events/s) | vs ceiling (1) |",
    "|---|---:|---:|---:|---|---:|",
  ];
  for (const c of r.consumers) {
    if (c.status !== "ok") {
      rows.push(`| ${c.label} | n/a | n/a | n/a | ${escapeCell(c.reason ?? "")} | n/a |`);
      continue;
    }
    rows.push(
      `| ${c.label} | ${int(c.medianMs!)} | ${int(c.eventsPerSec!)} | ${c.mbPerSec!.toFixed(0)} | ` +
        `${int(c.minEventsPerSec!)}–${int(c.maxEventsPerSec!)} | ${ratio(c.vsCeiling)} |`,
    );
  }
  rows.push("");
  rows.push(
    `appwatch fetch (3) vs client-node (5): **${ratio(r.ratios.fetchVsClientNode)}**; ` +
      `reflector (4) vs client-node (5): **${ratio(r.ratios.reflectorVsClientNode)}**; ` +
      `fetch (3) vs in-memory bytes (2): ${ratio(r.ratios.fetchVsBytes)}; ` +
      `**pruned** fetch (7) vs the peer: **${ratio(r.ratios.prunedFetchVsPeer)}**, pruned reflector (8) vs the peer: **${ratio(r.ratios.prunedReflectorVsPeer)}**; ` +
      `**product path** (${r.productPrunes ? "10, pruned" : "11, unpruned"}) vs the peer: **${ratio(r.ratios.productVsPeer)}**; ` +
      `product path pruned (10) ÷ unpruned (11): **${ratio(r.ratios.productPrunedVsUnpruned)}**.`,
  );
  return rows.join("\n");
}

/** Makes text safe inside a Markdown table cell. */
export function escapeCell(s: string): string {
  return s.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");
}
