/**
 * Profiling harness for B1's product path (`decoder.bench.ts` consumer 10/11) alone, so a CPU
 * profile holds nothing else: starts the bench server, runs the product path PROFILE_RUNS times
 * (default 3) with pruning on or off (PROFILE_PRUNE=0|1, default: the product's choice).
 *
 *     node --import tsx --cpu-prof --cpu-prof-dir=/tmp/prof bench/decoder/profile-product.ts
 *     deno run -A --v8-flags=--cpu-prof … / bun bench/decoder/profile-product.ts (timings only)
 *
 * `bench/lib/profile-summary.ts <file.cpuprofile>` prints the self time per function.
 * @module
 */
import process from "node:process";
import { createKubeClient } from "../../src/kube/connect.ts";
import { KSERVICE_PRUNE, kserviceWatcherOptions } from "../../src/flyte/kservices.ts";
import { createWatcher } from "../../src/watch/group.ts";
import { runtimeName } from "../../src/runtime.ts";
import { BENCH_NAMESPACE } from "../lib/data.ts";
import { startBenchServer } from "./server-process.ts";

const events = Number(process.env.BENCH_EVENTS ?? 10_000);
const runs = Number(process.env.PROFILE_RUNS ?? 3);
// The product prunes on every runtime; PROFILE_PRUNE=0 profiles the unpruned path.
const prune = process.env.PROFILE_PRUNE !== "0";
const server = await startBenchServer(events);
try {
  for (let i = 0; i < runs; i++) {
    const client = await createKubeClient({ server: server.meta.url, namespace: BENCH_NAMESPACE, tls: { insecureSkipVerify: false }, auth: { type: "none" }, source: "bench" });
    const watcher = createWatcher(kserviceWatcherOptions(client, [BENCH_NAMESPACE], { initialList: "paginated", prune: prune ? KSERVICE_PRUNE : [] }));
    const ac = new AbortController();
    const t0 = performance.now();
    let n = 0;
    for await (const e of watcher.run(ac.signal)) {
      if (e.type !== "synced" && ++n === server.meta.events) break;
    }
    ac.abort();
    await client.close();
    console.error(`[${runtimeName()}] product path (prune ${prune ? "on" : "off"}): ${n} events in ${Math.round(performance.now() - t0)} ms`);
  }
} finally {
  await server.close();
}
