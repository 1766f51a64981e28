/**
 * B3 and B6 helper: the "API server" process — the sandbox (src/sandbox) over HTTP,
 * seeded with `BENCH_APPS` realistic Flyte app KServices in namespace
 * `bench`, plus a change driver that runs in this process so every write's
 * time is taken right at the store write (no HTTP hop before the stamp).
 *
 * Always run on Node (`node --import tsx bench/lib/apiserver.ts`), the
 * same API server whatever runtime the appwatch server under test uses.
 * Protocol: JSON lines. stdout: `{"ready":{url,apps:[{name,project,domain,app}]}}`
 * once listening; then for every stdin command one answer line.
 * stdin: `{"drive":{"rate":1000,"seconds":10}}` → status writes at `rate`/s
 * round-robin over the apps (each one a new Ready condition message
 * `bench t=<ms epoch> s=<seq>`; with BENCH_STAMP_US=1, t in µs), answered with `{"driven":{writes,perApp,
 * seconds,lagMs,cpuSeconds}}`; `{"cpu":{}}` → `{"cpu":seconds}`; `{"exit":{}}`.
 * @module
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { cpuSeconds } from "./common.ts";
import { startSandbox } from "../../src/sandbox/mod.ts";
import type { KubeObject } from "../../src/watch/types.ts";
import { distinctApps } from "./fixtures.ts";

const APPS = Number(process.env.BENCH_APPS ?? 1000);
const NS = "bench";
/** B6 (`BENCH_STAMP_US=1`): stamp in µs since the epoch (`performance.timeOrigin + performance.now()`), not Date.now() ms. */
const stampNow = process.env.BENCH_STAMP_US === "1" ? () => Math.round((performance.timeOrigin + performance.now()) * 1000) : () => Date.now();


const sb = await startSandbox({ port: 0, initialResourceVersion: 1000 });
const objects = distinctApps(APPS);
const statuses: Record<string, unknown>[] = [];
for (const obj of objects) {
  const { status, ...rest } = obj;
  const { resourceVersion: _rv, uid: _uid, generation: _gen, ...metadata } = rest.metadata;
  sb.sandbox.create("services", { ...rest, metadata } as KubeObject);
  sb.sandbox.updateStatus("services", NS, obj.metadata.name!, status);
  statuses.push(status as Record<string, unknown>);
}
const apps = objects.map((o) => {
  const [project, domain, app] = (o.metadata.annotations!["flyte.org/app-id"] as string).split("/");
  return { name: o.metadata.name!, project, domain, app };
});

/** A copy of app i's status whose Ready condition carries the stamp. */
function stamped(i: number, t: number, seq: number): Record<string, unknown> {
  const base = statuses[i]!;
  const conditions = (base.conditions as Record<string, unknown>[]).map((c) =>
    c.type === "Ready" ? { lastTransitionTime: c.lastTransitionTime, message: `bench t=${t} s=${seq}`, status: "True", type: "Ready" } : c
  );
  return { ...base, conditions };
}

let seq = 0;
let next = 0;

async function drive(rate: number, seconds: number): Promise<Record<string, unknown>> {
  const perApp = new Array<number>(apps.length).fill(0);
  const total = Math.round(rate * seconds);
  const cpu0 = cpuSeconds();
  const start = performance.now();
  let done = 0;
  let maxLag = 0;
  while (done < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate));
    if (due - done > 0) maxLag = Math.max(maxLag, ((due - done) / rate) * 1000);
    while (done < due) {
      const i = next;
      next = (next + 1) % apps.length;
      seq++;
      sb.sandbox.updateStatus("services", NS, apps[i]!.name, stamped(i, stampNow(), seq));
      perApp[i]!++;
      done++;
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  const elapsed = (performance.now() - start) / 1000;
  return { writes: done, perApp, seconds: elapsed, maxLagMs: maxLag, cpuSeconds: cpuSeconds() - cpu0 };
}

const say = (o: unknown) => process.stdout.write(JSON.stringify(o) + "\n");
say({ ready: { url: sb.url, namespace: NS, apps } });

// An exit, not the default kill, on SIGTERM: a `--cpu-prof` profile is written at exit.
process.on("SIGTERM", () => process.exit(0));
const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line) as { drive?: { rate: number; seconds: number }; cpu?: unknown; exit?: unknown };
  if (cmd.drive) say({ driven: await drive(cmd.drive.rate, cmd.drive.seconds) });
  else if (cmd.cpu) say({ cpu: cpuSeconds() });
  else if (cmd.exit) break;
}
await sb.close();
process.exit(0);
