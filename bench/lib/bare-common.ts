/**
 * B3 limit: what the three bare fan-out servers (`../fanout/bare-{node,deno,bun}.ts`) share — no
 * appwatch code (nothing from `src/`), only what any broadcast server needs: route a socket by
 * its query, send the frames it is given at the rate it is told, and answer the B3 driver
 * (`bench/fanout/fanout.ts --bare`) on stdin/stdout. B6 uses it too: its relay (`../latency/relay.ts`) routes
 * sockets with the same `topicOf`/`Topics`, and both B6 contenders report `runtimeVersion()`.
 *
 * The frames are not made here: the driver captures, over a WebSocket, the bytes appwatch sends
 * (the start frame, and one update frame per app), and hands them over as templates split around
 * the `bench t=<ms> s=<seq>` stamp. A drive writes `rate` frames/s round-robin over the apps with
 * the same loop as the API server's (`apiserver.ts`), stamping each frame with
 * `Date.now()` where appwatch's frames carry the API server's write time; every frame goes to the
 * all-apps sockets, the app's project+domain sockets and the app's own sockets, as in appwatch.
 *
 * Protocol (JSON lines; one answer line per command):
 * - stdout first: `{"ready":{"url":"ws://…","runtime":…,"version":…,"pid":…}}`;
 * - `{"frames":{"start":"…"}}` and/or `{"frames":{"apps":[{"key":"p/d/a","prefix":…,"suffix":…}]}}` → `{"frames":{…counts}}`;
 * - `{"drive":{"rate":1000,"seconds":5}}` → `{"driven":{writes,perApp,seconds,maxLagMs,cpuSeconds}}`;
 * - `{"cpu":{}}` → `{"cpu":seconds}`; `{"mem":{}}` → a full GC, then `{"mem":{rss,heapUsed,…,gc}}`;
 * - `{"exit":{}}` → exits.
 * @module
 */
import process from "node:process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

/** Where a subscriber belongs, from its `/v1/watch?…` query: `*`, `p/d` or `p/d/a` (appwatch's three filters). */
export function topicOf(url: string): string {
  const q = new URL(url, "http://x").searchParams;
  const project = q.get("project");
  const domain = q.get("domain");
  const app = q.get("app");
  if (project && domain && app) return `${project}/${domain}/${app}`;
  if (project && domain) return `${project}/${domain}`;
  return "*";
}

/** Sockets by topic, for the runtimes without a built-in publish (Node `ws`, Deno). */
export class Topics<S> {
  readonly #byTopic = new Map<string, Set<S>>();
  size = 0;

  add(topic: string, s: S): void {
    let set = this.#byTopic.get(topic);
    if (!set) this.#byTopic.set(topic, (set = new Set()));
    set.add(s);
    this.size++;
  }

  delete(topic: string, s: S): void {
    if (this.#byTopic.get(topic)?.delete(s)) this.size--;
  }

  get(topic: string): Set<S> | undefined {
    return this.#byTopic.get(topic);
  }
}

/** What a runtime's bare server gives the shared part. */
export interface BareServer {
  url: string;
  /** Sends `frame` (a text frame) to every socket of `topic`. */
  publish(topic: string, frame: string): void;
  /** Open sockets (for the driver's log). */
  sockets(): number;
}

/** The start frame every new socket gets first (the load process waits for it); set by the driver. */
export const frames: { start: string; apps: { key: string; group: string; prefix: string; suffix: string }[] } = {
  start: `{"start":{"mode":"live"}}`,
  apps: [],
};

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
export const RUNTIME: "node" | "deno" | "bun" = g.Deno?.version?.deno ? "deno" : g.Bun ? "bun" : "node";

export function runtimeVersion(): string {
  if (RUNTIME === "deno") return `Deno ${g.Deno.version.deno} (V8 ${g.Deno.version.v8})`;
  if (RUNTIME === "bun") return `Bun ${g.Bun.version} (JavaScriptCore)`;
  return `Node ${process.versions.node} (V8 ${process.versions.v8})`;
}

function cpuSeconds(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

function rssBytes(): number {
  return Number(readFileSync("/proc/self/statm", "utf8").split(" ")[1]) * 4096;
}

/** A full GC the way `bench/fanout/fanout.ts` does it for appwatch, so that both RSS figures are taken alike. */
async function fullGc(): Promise<boolean> {
  let gcFn: (() => void) | undefined = typeof g.gc === "function" ? () => g.gc() : g.Bun?.gc ? () => g.Bun.gc(true) : undefined;
  if (!gcFn) {
    try {
      const v8 = await import("node:v8");
      const vm = await import("node:vm");
      v8.setFlagsFromString("--expose-gc");
      const fn = vm.runInNewContext("gc");
      if (typeof fn === "function") gcFn = fn;
    } catch { /* none */ }
  }
  if (!gcFn) return false;
  for (let i = 0; i < 3; i++) {
    gcFn();
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

let seq = 0;
let next = 0;

/** The API server's drive loop (`apiserver.ts`), with a broadcast where it writes to its store. */
async function drive(server: BareServer, rate: number, seconds: number): Promise<Record<string, unknown>> {
  const apps = frames.apps;
  if (apps.length === 0) throw new Error("drive before frames: the driver sends the captured frames first");
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
      const a = apps[i]!;
      const frame = `${a.prefix}bench t=${Date.now()} s=${seq}${a.suffix}`;
      server.publish("*", frame);
      server.publish(a.group, frame);
      server.publish(a.key, frame);
      perApp[i]!++;
      done++;
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  const elapsed = (performance.now() - start) / 1000;
  return { writes: done, perApp, seconds: elapsed, maxLagMs: maxLag, cpuSeconds: cpuSeconds() - cpu0 };
}

/** Announces `server` on stdout and serves the driver's commands until `exit` (or stdin ends). */
export async function control(server: BareServer): Promise<never> {
  const say = (o: unknown) => process.stdout.write(JSON.stringify(o) + "\n");
  say({ ready: { url: server.url, runtime: RUNTIME, version: runtimeVersion(), pid: process.pid } });
  const rl = createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    if (cmd.frames) {
      if (typeof cmd.frames.start === "string") frames.start = cmd.frames.start;
      if (Array.isArray(cmd.frames.apps)) {
        frames.apps = (cmd.frames.apps as { key: string; prefix: string; suffix: string }[]).map((a) => ({ ...a, group: a.key.split("/").slice(0, 2).join("/") }));
      }
      say({ frames: { start: frames.start.length, apps: frames.apps.length } });
    } else if (cmd.drive) say({ driven: await drive(server, cmd.drive.rate, cmd.drive.seconds) });
    else if (cmd.cpu) say({ cpu: cpuSeconds() });
    else if (cmd.mem) {
      const gc = await fullGc();
      const m = process.memoryUsage();
      say({ mem: { rss: rssBytes(), heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external ?? 0, arrayBuffers: m.arrayBuffers ?? 0, gc, sockets: server.sockets() } });
    } else if (cmd.exit) break;
  }
  process.exit(0);
}
