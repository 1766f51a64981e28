/**
 * Watch-decoding benchmark: the consumers side by side, in one process, on
 * the same bytes (N Knative Service MODIFIED events from `bench/lib/data.ts`):
 *
 * 1. ceiling: `JSON.parse` of pre-split string lines, no I/O;
 * 2. ceiling with bytes: 64 KiB chunks already in memory → `ndjsonValues`;
 * 3. appwatch: `fetch` from the loopback server → `ndjsonValues`;
 * 4. appwatch reflector end to end (empty list page, then the watch stream);
 * 5. (6)–(8): (2)–(4) again with byte-level pruning (`prune`: the KService's
 *    `metadata.managedFields` and `spec` cut out before decoding, as
 *    `AppK8sClient` does);
 * 9. peer: `@kubernetes/client-node` 1.4.0 `Watch` on the same stream, and
 *    2.0.1 (npm alias `@kubernetes/client-node-2`) on Deno and Bun — it cannot
 *    load on Node 20;
 * 10./11. the product path: exactly what `AppK8sClient` runs for its KService
 *    watch (`createKubeClient` with this runtime's transport, the watcher
 *    options of `kserviceWatcherOptions`), with pruning (10) and without (11);
 *    The product runs (10), pruned, on every runtime.
 *
 * Every run of every consumer is checked to have received all N events (count
 * and an order-sensitive checksum over the names); a mismatch aborts the
 * benchmark. One warm-up round, then BENCH_RUNS (default 5) measured rounds;
 * within a round the consumers run one after the other, in an order rotated
 * every round, so machine noise hits all alike. Reported: medians.
 *
 * Runs on Node (`node --import tsx --expose-gc`), Deno (`deno run -A
 * --v8-flags=--expose-gc`) and Bun (`bun`). Normally started by `bench/decoder/run.ts`,
 * which passes BENCH_SERVER_URL; without it, the benchmark starts its own
 * server process (BENCH_EVENTS events, default 20,000).
 *
 * Env: BENCH_SERVER_URL, BENCH_EVENTS, BENCH_RUNS, BENCH_RESULT_FILE,
 * BENCH_HANG_MS (a consumer run with no result after this long counts as failed —
 * a guard against hangs, not a performance threshold; default 120 s).
 * @module
 */
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import os from "node:os";
import process from "node:process";
import { dirname, join } from "node:path";
import { ndjsonValues } from "../../src/watch/ndjson.ts";
import { KubeClient } from "../../src/kube/client.ts";
import { createKubeClient } from "../../src/kube/connect.ts";
import { KSERVICE_PRUNE, kserviceWatcherOptions } from "../../src/flyte/kservices.ts";
import { createWatcher } from "../../src/watch/group.ts";
import { Reflector } from "../../src/watch/reflector.ts";
import { KNATIVE_SERVICES } from "../../src/watch/types.ts";
import type { PrunePaths } from "../../src/watch/prune.ts";
import { BENCH_NAMESPACE, BENCH_PATH, chunkBytes, NameChecksum, splitLines } from "../lib/data.ts";
import type { ServerMeta } from "./server.ts";
import { type BenchServer, REPO_ROOT, startBenchServer } from "./server-process.ts";
import { CONSUMER_IDS, type ConsumerId, type ConsumerResult, median, mb, runtimeTable, type RuntimeResult } from "./report.ts";

/** The product prunes on every runtime (`kserviceWatcherOptions`): (10) is the product path. */
const PRODUCT_PRUNES = true;

// ------------------------------------------------------------------ runtime

interface DenoGlobal {
  version: { deno: string; v8: string; typescript: string };
}
interface BunGlobal {
  version: string;
  revision: string;
  gc(force: boolean): void;
}
const g = globalThis as unknown as { Deno?: DenoGlobal; Bun?: BunGlobal; gc?: () => void };

type RuntimeName = RuntimeResult["runtime"];
const runtime: RuntimeName = g.Deno ? "deno" : g.Bun ? "bun" : "node";

function runtimeVersion(): string {
  if (g.Deno) return `Deno ${g.Deno.version.deno} (V8 ${g.Deno.version.v8})`;
  if (g.Bun) return `Bun ${g.Bun.version} (JavaScriptCore, ${g.Bun.revision.slice(0, 9)})`;
  return `Node ${process.version.slice(1)} (V8 ${process.versions.v8})`;
}

/** A full, forced GC where the runtime offers one; true if it did. */
function fullGc(): boolean {
  if (g.Bun) {
    g.Bun.gc(true);
    return true;
  }
  if (typeof g.gc === "function") {
    g.gc();
    return true;
  }
  return false;
}

// ------------------------------------------------------------------ config

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

const RUNS = envInt("BENCH_RUNS", 5);
const HANG_MS = envInt("BENCH_HANG_MS", 120_000);

// ------------------------------------------------------------------ checks

/** Thrown when a consumer did not receive exactly the served events: always fatal. */
class VerificationError extends Error {
  override readonly name = "VerificationError";
}

interface WatchLine {
  type: string;
  object: { metadata: { name: string } };
}

function verify(id: ConsumerId, sum: NameChecksum, meta: ServerMeta): void {
  if (sum.count !== meta.events || sum.value !== meta.checksum) {
    throw new VerificationError(
      `${id} on ${runtime}: received ${sum.count} events with checksum ${sum.value}, ` +
        `expected ${meta.events} with checksum ${meta.checksum}`,
    );
  }
}

// ------------------------------------------------------------------ consumers

interface Consumer {
  id: ConsumerId;
  label: string;
  /** Errors here make the consumer "n/a" on this runtime instead of failing the run. */
  optional: boolean;
  /** Unavailable before any run (e.g. the library did not load). */
  unavailable?: string;
  run(): Promise<NameChecksum>;
}

function memoryStream(chunks: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]!);
      else controller.close();
    },
  });
}

type ClientNode = typeof import("@kubernetes/client-node");

/** What AppK8sClient prunes from its watch (src/flyte/kservices.ts). */
const APP_PRUNE: PrunePaths = [["object", "metadata", "managedFields"], ["object", "spec"]];

async function loadClientNode(): Promise<{ lib?: ClientNode; error?: string }> {
  try {
    return { lib: await import("@kubernetes/client-node") };
  } catch (err) {
    return { error: `import failed: ${(err as Error).message}` };
  }
}

/** client-node 2.x (npm alias); not on Node 20, where importing it crashes the process (its undici 8). */
async function loadClientNode2(): Promise<{ lib?: ClientNode; error?: string }> {
  if (runtime === "node") return { error: "client-node 2.x needs Node ≥ 22.19 (crashes at import on Node 20); 1.4.0 is the peer here" };
  const name = "@kubernetes/client-node-2"; // a variable: keeps its types (and its @types/node 26) out of tsc
  try {
    return { lib: await import(name) as ClientNode };
  } catch (err) {
    return { error: `import failed: ${(err as Error).message}` };
  }
}

function clientNodeWatch(url: string, lib: ClientNode): Promise<NameChecksum> {
  const kc = new lib.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: url, skipTLSVerify: true }],
    users: [{ name: "u" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  const sum = new NameChecksum();
  return new Promise<NameChecksum>((resolve, reject) => {
    new lib.Watch(kc)
      .watch(
        BENCH_PATH,
        {},
        (_type: string, obj: { metadata?: { name?: string } }) => sum.add(obj?.metadata?.name ?? ""),
        (err: unknown) => (err ? reject(err) : resolve(sum)),
      )
      .catch(reject);
  });
}

async function reflectorRun(url: string, meta: ServerMeta, prune: PrunePaths | undefined): Promise<NameChecksum> {
  const sum = new NameChecksum();
  const reflector = new Reflector({
    client: new KubeClient({ server: url }),
    resource: KNATIVE_SERVICES,
    namespace: BENCH_NAMESPACE,
    initialList: "paginated",
    prune,
  });
  const ac = new AbortController();
  let synced = 0;
  try {
    for await (const event of reflector.run(ac.signal)) {
      if (event.type === "synced") {
        synced++;
        continue;
      }
      if (event.type === "deleted") throw new VerificationError(`reflector on ${runtime}: unexpected deleted event`);
      if (prune && (event.object.spec !== undefined || event.object.metadata.managedFields !== undefined)) {
        throw new VerificationError(`pruned reflector on ${runtime}: spec/managedFields still present`);
      }
      sum.add(event.object.metadata.name ?? "");
      if (sum.count === meta.events) break;
    }
  } finally {
    ac.abort();
  }
  const m = reflector.metrics;
  if (synced !== 1 || m.lists !== 1 || m.watches !== 1) {
    throw new VerificationError(
      `reflector on ${runtime}: expected 1 sync, 1 list and 1 watch, got ${synced} syncs, ${m.lists} lists, ${m.watches} watches`,
    );
  }
  return sum;
}

/**
 * The product path: what `AppK8sClient` runs for its KService watch — the client `createKubeClient`
 * builds (this runtime's transport from `src/kube/transport.ts`, credentials, 401 retry), the
 * watcher options of `kserviceWatcherOptions` (label selector, `slimKService` parse, the runtime's
 * prune choice unless `prune` overrides it). Only `initialList: "paginated"` is set, a tuning option
 * `AppK8sClient` passes through: the bench server serves a plain watch, not a streaming list.
 */
async function productRun(url: string, meta: ServerMeta, prune: boolean): Promise<NameChecksum> {
  const client = await createKubeClient({
    server: url,
    namespace: BENCH_NAMESPACE,
    tls: { insecureSkipVerify: false },
    auth: { type: "none" },
    source: "bench",
  });
  const watcher = createWatcher(kserviceWatcherOptions(client, [BENCH_NAMESPACE], { initialList: "paginated", prune: prune ? KSERVICE_PRUNE : [] }));
  const sum = new NameChecksum();
  const ac = new AbortController();
  let synced = 0;
  try {
    for await (const event of watcher.run(ac.signal)) {
      if (event.type === "synced") {
        synced++;
        continue;
      }
      if (event.type === "deleted") throw new VerificationError(`product path on ${runtime}: unexpected deleted event`);
      if (event.object.spec !== undefined || event.object.metadata.managedFields !== undefined) {
        throw new VerificationError(`product path on ${runtime}: spec/managedFields still present`);
      }
      sum.add(event.object.metadata.name ?? "");
      if (sum.count === meta.events) break;
    }
  } finally {
    ac.abort();
    await client.close();
  }
  const m = watcher.metricsSnapshot();
  if (synced !== 1 || m.lists !== 1 || m.watches !== 1) {
    throw new VerificationError(
      `product path on ${runtime}: expected 1 sync, 1 list and 1 watch, got ${synced} syncs, ${m.lists} lists, ${m.watches} watches`,
    );
  }
  return sum;
}

function makeConsumers(
  url: string,
  meta: ServerMeta,
  lines: string[],
  chunks: Uint8Array[],
  clientNode: { lib?: ClientNode; error?: string },
  clientNode2: { lib?: ClientNode; error?: string },
): Consumer[] {
  const watchUrl = `${url}${BENCH_PATH}?watch=1`;
  const consumers: Consumer[] = [
    {
      id: "ceiling",
      label: "(1) ceiling: `JSON.parse` of pre-split lines, no I/O",
      optional: false,
      run() {
        const sum = new NameChecksum();
        for (const line of lines) sum.add((JSON.parse(line) as WatchLine).object.metadata.name);
        return Promise.resolve(sum);
      },
    },
    {
      id: "bytes",
      label: "(2) ceiling with bytes: 64 KiB chunks in memory → `ndjsonValues`",
      optional: false,
      async run() {
        const sum = new NameChecksum();
        for await (const v of ndjsonValues(memoryStream(chunks))) sum.add((v as WatchLine).object.metadata.name);
        return sum;
      },
    },
    {
      id: "fetch",
      label: "(3) appwatch: `fetch` loopback → `ndjsonValues`",
      optional: false,
      async run() {
        const sum = new NameChecksum();
        const res = await fetch(watchUrl);
        if (!res.ok || !res.body) throw new Error(`GET ${watchUrl}: HTTP ${res.status}`);
        for await (const v of ndjsonValues(res.body)) sum.add((v as WatchLine).object.metadata.name);
        return sum;
      },
    },
    {
      id: "reflector",
      label: "(4) appwatch `Reflector` end to end (list + watch, store, events)",
      optional: false,
      run: () => reflectorRun(url, meta, undefined),
    },
    {
      id: "bytes-pruned",
      label: "(6) = (2) with pruning: 64 KiB chunks in memory → `ndjsonValues({prune})`",
      optional: false,
      async run() {
        const sum = new NameChecksum();
        for await (const v of ndjsonValues(memoryStream(chunks), { prune: APP_PRUNE })) sum.add((v as WatchLine).object.metadata.name);
        return sum;
      },
    },
    {
      id: "fetch-pruned",
      label: "(7) = (3) with pruning: `fetch` loopback → `ndjsonValues({prune})`",
      optional: false,
      async run() {
        const sum = new NameChecksum();
        const res = await fetch(watchUrl);
        if (!res.ok || !res.body) throw new Error(`GET ${watchUrl}: HTTP ${res.status}`);
        for await (const v of ndjsonValues(res.body, { prune: APP_PRUNE })) sum.add((v as WatchLine).object.metadata.name);
        return sum;
      },
    },
    {
      id: "reflector-pruned",
      label: "(8) = (4) with pruning: `Reflector({prune})`, as `AppK8sClient` runs it",
      optional: false,
      run: () => reflectorRun(url, meta, APP_PRUNE),
    },
    {
      id: "product-pruned",
      label: "(10) **product path**, pruned: `createKubeClient` transport + `kserviceWatcherOptions` (as `AppK8sClient`), `prune` on",
      optional: false,
      run: () => productRun(url, meta, true),
    },
    {
      id: "product-unpruned",
      label: "(11) **product path**, unpruned: the same with `prune: []` (`slimKService` drops spec/managedFields after parsing)",
      optional: false,
      run: () => productRun(url, meta, false),
    },
  ];
  for (const [id, label, loaded] of [
    ["client-node", "(5) peer: `@kubernetes/client-node` 1.4.0 `Watch`", clientNode],
    ["client-node-2", "(9) peer: `@kubernetes/client-node` 2.0.1 `Watch`", clientNode2],
  ] as const) {
    const lib = loaded.lib;
    const c: Consumer = {
      id,
      label,
      optional: true,
      run() {
        if (!lib) throw new Error(loaded.error ?? "client-node not loaded");
        return clientNodeWatch(url, lib);
      },
    };
    if (!lib) c.unavailable = loaded.error ?? "client-node not loaded";
    consumers.push(c);
  }
  return consumers;
}

/** One timed run; resolves with the elapsed ms. Verification errors propagate. */
async function timedRun(c: Consumer, meta: ServerMeta): Promise<number> {
  fullGc();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no result after ${HANG_MS} ms (hung)`)), HANG_MS);
  });
  const t0 = performance.now();
  try {
    const sum = await Promise.race([c.run(), hang]);
    const ms = performance.now() - t0;
    verify(c.id, sum, meta);
    return ms;
  } finally {
    clearTimeout(timer);
  }
}

/** CPU time this process has used so far (seconds), where the runtime reports it. */
function cpuSeconds(): number | undefined {
  try {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  } catch {
    return undefined;
  }
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return `${err.name}: ${err.message}${cause instanceof Error ? ` (cause: ${cause.message})` : ""}`;
}

// ------------------------------------------------------------------ main

async function main(): Promise<void> {
  const started = performance.now();
  let server: BenchServer | undefined;
  let url = process.env.BENCH_SERVER_URL;
  try {
    if (!url) {
      server = await startBenchServer(envInt("BENCH_EVENTS", 20_000));
      url = server.meta.url;
    }
    const meta = await (await fetch(`${url}/meta`)).json() as ServerMeta;

    // The exact bytes every consumer gets, fetched once (also checks the server).
    const raw = new Uint8Array(await (await fetch(`${url}${BENCH_PATH}?watch=1`)).arrayBuffer());
    if (raw.length !== meta.bytes) throw new VerificationError(`got ${raw.length} bytes from the server, expected ${meta.bytes}`);
    const lines = splitLines(raw);
    const chunks = chunkBytes(raw);
    const clientNode = await loadClientNode(); // import cost stays out of every measurement
    const clientNode2 = await loadClientNode2();
    const consumers = makeConsumers(url, meta, lines, chunks, clientNode, clientNode2);
    const gcBetweenRuns = fullGc();
    console.error(
      `[${runtime}] ${runtimeVersion()}: ${meta.events} events, ${mb(meta.bytes)} MB, ` +
        `${meta.nonAscii} with non-ASCII; warm-up + ${RUNS} rounds; forced GC between runs: ${gcBetweenRuns ? "yes" : "no"}`,
    );

    const results = new Map<ConsumerId, ConsumerResult>();
    for (const c of consumers) {
      results.set(c.id, { id: c.id, label: c.label, status: c.unavailable ? "n/a" : "ok", runsMs: [], ...(c.unavailable ? { reason: c.unavailable } : {}) });
    }
    const active = () => consumers.filter((c) => results.get(c.id)!.status === "ok");

    for (let round = 0; round <= RUNS; round++) {
      const list = active();
      const shift = round % list.length;
      const order = [...list.slice(shift), ...list.slice(0, shift)];
      for (const c of order) {
        const r = results.get(c.id)!;
        let ms: number;
        try {
          ms = await timedRun(c, meta);
        } catch (err) {
          if (err instanceof VerificationError || !c.optional) throw err;
          r.status = "n/a";
          r.reason = `${round === 0 ? "warm-up" : `round ${round}`} failed: ${errorText(err)}`;
          console.error(`[${runtime}] ${c.id}: n/a — ${r.reason}`);
          continue;
        }
        if (round === 0) r.warmupMs = ms;
        else r.runsMs.push(ms);
      }
      console.error(
        `[${runtime}] ${round === 0 ? "warm-up" : `round ${round}/${RUNS}`}: ` +
          order.map((c) => {
            const r = results.get(c.id)!;
            const last = round === 0 ? r.warmupMs : r.runsMs[r.runsMs.length - 1];
            return `${c.id} ${last === undefined ? "n/a" : `${Math.round(last)} ms`}`;
          }).join(", "),
      );
    }

    for (const r of results.values()) {
      if (r.status !== "ok") continue;
      const eps = r.runsMs.map((ms) => meta.events / (ms / 1000));
      r.medianMs = median(r.runsMs);
      r.eventsPerSec = meta.events / (r.medianMs / 1000);
      r.mbPerSec = meta.bytes / 1e6 / (r.medianMs / 1000);
      r.minEventsPerSec = Math.min(...eps);
      r.maxEventsPerSec = Math.max(...eps);
    }
    const ceiling = results.get("ceiling")!.eventsPerSec!;
    for (const r of results.values()) if (r.eventsPerSec !== undefined) r.vsCeiling = r.eventsPerSec / ceiling;
    const eps = (id: ConsumerId) => results.get(id)?.eventsPerSec;
    const div = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined ? a / b : undefined);

    const cpus = os.cpus();
    const result: RuntimeResult = {
      runtime,
      runtimeVersion: runtimeVersion(),
      date: new Date().toISOString(),
      machine: {
        cores: cpus.length,
        cpu: cpus[0]?.model.trim() ?? "unknown",
        memoryGiB: Math.round(os.totalmem() / 2 ** 30),
        platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      },
      events: meta.events,
      bytes: meta.bytes,
      nonAsciiEvents: meta.nonAscii,
      runs: RUNS,
      gcBetweenRuns,
      consumers: CONSUMER_IDS.map((id) => results.get(id)!),
      ratios: {
        fetchVsClientNode: div(eps("fetch"), eps("client-node")),
        reflectorVsClientNode: div(eps("reflector"), eps("client-node")),
        fetchVsBytes: div(eps("fetch"), eps("bytes")),
        prunedFetchVsPeer: div(eps("fetch-pruned"), eps("client-node-2") ?? eps("client-node")),
        prunedReflectorVsPeer: div(eps("reflector-pruned"), eps("client-node-2") ?? eps("client-node")),
        productVsPeer: div(eps(PRODUCT_PRUNES ? "product-pruned" : "product-unpruned"), eps("client-node-2") ?? eps("client-node")),
        productPrunedVsPeer: div(eps("product-pruned"), eps("client-node-2") ?? eps("client-node")),
        productUnprunedVsPeer: div(eps("product-unpruned"), eps("client-node-2") ?? eps("client-node")),
        productPrunedVsUnpruned: div(eps("product-pruned"), eps("product-unpruned")),
      },
      productPrunes: PRODUCT_PRUNES,
      totalMs: Math.round(performance.now() - started),
      cpuSeconds: cpuSeconds(),
    };

    const file = process.env.BENCH_RESULT_FILE ?? join(REPO_ROOT, "bench", "results", `${runtime}.json`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(`${file}.tmp`, JSON.stringify(result, null, 2) + "\n");
    renameSync(`${file}.tmp`, file);

    console.log(`\n### ${result.runtimeVersion} — ${meta.events.toLocaleString("en-US")} events, ${mb(meta.bytes)} MB\n`);
    console.log(runtimeTable(result));
    console.log(`\nwritten: ${file}`);
  } finally {
    await server?.close();
  }
}

try {
  await main();
  process.exit(0); // keep-alive sockets and client-node's agent must not hold the process open
} catch (err) {
  console.error(`[${runtime}] BENCHMARK FAILED: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
  process.exit(1);
}
