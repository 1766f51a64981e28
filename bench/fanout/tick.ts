/**
 * How long one tick of the shared heartbeat/ping ticker (src/service/ticker.ts)
 * holds the server's thread with thousands of idle WebSocket subscribers.
 *
 *   node --import tsx bench/fanout/tick.ts
 *   npx deno run -A bench/fanout/tick.ts
 *   npx bun bench/fanout/tick.ts
 *
 * For each heartbeat period in TICK_PERIODS_S (default "0.25,2.5": one slot,
 * i.e. every stream's heartbeat in the same tick, vs ten slots), starts the
 * service on the sandbox, opens TICK_SUBS (5,000) idle subscribers from a
 * separate Node `ws` load process (bench/lib/load.ts), lets TICK_PERIODS (4)
 * periods pass and reads the ticker's own statistics (longest slot tick, most
 * callbacks in one tick). On Node the WebSocket protocol pings run on the adapter's own
 * ticker too (pingSeconds = the heartbeat period × 2). Prints one JSON line per
 * period.
 * @module
 */
import process from "node:process";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startSandboxCluster } from "../../src/sandbox/mod.ts";
import { startService } from "../../src/service/server.ts";
import { DEFAULT_SETTINGS } from "../../src/service/settings/mod.ts";
import { createLogger } from "../../src/log.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const SUBS = Number(process.env.TICK_SUBS ?? 5000);
const PERIODS = Number(process.env.TICK_PERIODS ?? 4);
const PERIODS_S = (process.env.TICK_PERIODS_S ?? "0.25,2.5").split(",").map(Number).filter((n) => n > 0);
// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const RUNTIME = g.Deno?.version?.deno ? "deno" : g.Bun ? "bun" : "node";

const load = spawn("node", ["--import", "tsx", "bench/lib/load.ts"], { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
const lines = createInterface({ input: load.stdout! });
const waiting: ((l: string) => void)[] = [];
lines.on("line", (l) => waiting.shift()?.(l));
const send = (cmd: unknown) =>
  new Promise<Record<string, unknown>>((resolve) => {
    waiting.push((l) => resolve(JSON.parse(l)));
    load.stdin!.write(JSON.stringify(cmd) + "\n");
  });

for (const periodS of PERIODS_S) {
  const service = await startService({
    ...DEFAULT_SETTINGS,
    port: 0,
    host: "127.0.0.1",
    maxConnectionsPerClient: 1_000_000,
    heartbeatSeconds: periodS,
    pingSeconds: Math.max(1, periodS * 2),
    shutdownTimeoutSeconds: 5,
  }, { logger: createLogger({ level: "error" }), cluster: await startSandboxCluster({ demoIntervalMs: 0 }) });
  await service.watching;
  const ticker = { stats: () => service.api.heartbeatStats() };
  const subs = Array.from({ length: SUBS }, (_, id) => ({ id, query: "snapshot=false", key: "*" }));
  const opened = (await send({ open: { url: service.url.replace(/^http/, "ws"), subs } })).opened as { n: number };
  // Each period has its own (fresh) ticker, so its maxima are this run's; the largest ticks are those with every
  // subscriber registered.
  const s0 = ticker.stats();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, PERIODS * periodS * 1000 + 100));
  const s1 = ticker.stats();
  const maxMs = s1.maxTickMs;
  const maxCallbacks = s1.maxTickCallbacks;
  console.log(JSON.stringify({
    runtime: RUNTIME,
    subscribers: opened.n,
    heartbeatPeriodMs: periodS * 1000,
    slots: s1.slots,
    heartbeat: { callbacks: s1.callbacks, ticks: s1.ticks - s0.ticks, maxTickMs: +maxMs.toFixed(2), maxTickCallbacks: maxCallbacks, perCallbackUs: +((maxMs / Math.max(1, maxCallbacks)) * 1000).toFixed(2) },
    ping: RUNTIME === "node" ? "the Node adapter's own ticker, same slots (not measured here)" : "runtime pings (idleTimeout)",
    wallS: +((performance.now() - t0) / 1000).toFixed(1),
  }));
  await send({ close: { keep: 0 } });
  await service.stop();
}
load.stdin!.write(JSON.stringify({ exit: {} }) + "\n");
load.kill();
process.exit(0);
