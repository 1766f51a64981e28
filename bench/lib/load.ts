/**
 * B3 and B6 helper (and B3's tick measurement): the load process — thousands of WebSocket subscribers (the `ws`
 * package, no compression) against one appwatch server. Run on Node:
 * `node --import tsx bench/lib/load.ts`.
 *
 * Per frame it does the least a client can: look at the frame's first key and,
 * for app events, read the `bench t=<ms> s=<seq>` stamp straight from the
 * bytes (no JSON.parse), so that the load process is not the bottleneck
 * before the server is. Latency = receive time (Date.now()) − stamp.
 *
 * Protocol: JSON lines on stdin, one answer line on stdout per command:
 * - `{"open":{"url":…,"subs":[{"id":n,"query":"project=…&domain=…&app=…","key":"p/d/a"|"p/d"|"*"}]}}`
 *   → `{"opened":{n,ms,failed}}` once every new socket got its `start` frame; with
 *   `"transport":"sse"` or `"connect"` (B6; `url` is then `http://…`) the subscribers are SSE
 *   streams or Connect `AppService/Watch` streams (JSON codec) instead of WebSockets;
 * - `{"close":{"keep":n}}` → closes all but the first `n` → `{"closed":{open}}`;
 * - `{"reset":{}}` → clears counters and latency samples → `{"reset":true}`;
 * - `{"report":{"expected":{"p/d/a":writes,…}}}` → waits (≤ 15 s) until every
 *   subscriber has what it should, then `{"report":{…}}` (received, expected,
 *   lost, extra, latency percentiles, cpuSeconds);
 * - `{"capture":{"url":…,"query":…}}` → one more socket whose frames are kept as text,
 *   `{"capturing":{"start":"<its first frame>"}}`; `{"captured":{"n":k}}` → waits (≤ 30 s) for
 *   k event frames on it, closes it → `{"captured":{"frames":[…]}}` (the bare servers of
 *   `bench/fanout/fanout.ts --bare` send exactly these bytes);
 * - `{"quiet":{"ms":500}}` → waits until no frame has come for `ms` → `{"quiet":{frames}}`;
 * - `{"exit":{}}`.
 *
 * Every subscriber belongs to a `group` (the server it is connected to; default `appwatch`):
 * `open`, `close`, `reset` and `report` take an optional `group` and act on that group only, so
 * that one load process can hold the subscribers of two servers at once and measure each alike.
 * @module
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { cpuSeconds } from "./common.ts";
import WebSocket from "ws";
import { request as httpRequest, type IncomingMessage } from "node:http";

/** A subscriber's connection, whatever its transport: `close()` ends it cleanly, `terminate()` at once. */
interface Conn {
  close(code?: number): void;
  terminate(): void;
}

interface Sub {
  id: number;
  group: string;
  key: string;
  ws: Conn;
  received: number;
  lastSeq: number;
  outOfOrder: number;
  /** Connect: its snapshot's `createEvent`s are not live events (only `updateEvent`s count). */
  updatesOnly?: boolean;
}

const subs: Sub[] = [];
let samples = new Float64Array(1 << 20);
let nSamples = 0;
let frames = 0;
let heartbeats = 0;
let closedUnexpectedly = 0;


const STAMP = Buffer.from("bench t=");

/** Reads a decimal number from `buf` at `i` (until a non-digit). */
function numberAt(buf: Buffer, i: number): [number, number] {
  let n = 0;
  for (; i < buf.length; i++) {
    const c = buf[i]! - 48;
    if (c < 0 || c > 9) break;
    n = n * 10 + c;
  }
  return [n, i];
}

/** Receive time in ms since the epoch, to the µs: the clock every B6 process stamps with. */
const nowMs = () => performance.timeOrigin + performance.now();

function onMessage(sub: Sub, data: Buffer): void {
  const precise = nowMs();
  const now = Date.now();
  frames++;
  // {"updateEvent":…, {"createEvent":…, {"deleteEvent":…, {"start":…, {"heartbeat":…
  const k = data[2];
  if (k === 0x68 /* h */) {
    heartbeats++;
    return;
  }
  if (k !== 0x75 /* u */ && (k !== 0x63 /* c */ || sub.updatesOnly)) return;
  const at = data.indexOf(STAMP);
  if (at < 0) return;
  const [t, end] = numberAt(data, at + STAMP.length);
  const [seq] = numberAt(data, end + 3); // " s="
  sub.received++;
  if (seq <= sub.lastSeq) sub.outOfOrder++;
  sub.lastSeq = seq;
  if (nSamples === samples.length) {
    const bigger = new Float64Array(samples.length * 2);
    bigger.set(samples);
    samples = bigger;
  }
  // A stamp in µs (B6: `BENCH_STAMP_US`, > 1e14) is compared with the µs clock, one in ms with Date.now().
  samples[nSamples++] = t > 1e14 ? precise - t / 1000 : now - t;
}

/**
 * B6: a subscriber over SSE (`GET /v1/watch?…` with `Accept: text/event-stream`, one HTTP/1.1
 * connection each). Every record's `data:` payload goes to `onMessage` like a WebSocket frame; the
 * first record with data (the `start` frame) opens it.
 */
function openSse(url: string, group: string, id: number, query: string, key: string): Promise<Sub | undefined> {
  return new Promise((resolve) => {
    let started = false;
    const done = (s: Sub | undefined) => {
      if (!started) {
        started = true;
        resolve(s);
      }
    };
    const req = httpRequest(`${url}/v1/watch?${query}`, { agent: false, headers: { accept: "text/event-stream" } });
    const sub: Sub = { id, group, key, ws: { close: () => req.destroy(), terminate: () => req.destroy() }, received: 0, lastSeq: 0, outOfOrder: 0 };
    req.on("response", (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume();
        done(undefined);
        return;
      }
      let pending: Buffer | undefined;
      res.on("data", (chunk: Buffer) => {
        let buf = pending ? Buffer.concat([pending, chunk]) : chunk;
        for (;;) {
          const end = buf.indexOf("\n\n");
          if (end < 0) break;
          const at = buf.indexOf("data: ");
          if (at >= 0 && at < end) {
            if (!started) done(sub);
            else onMessage(sub, buf.subarray(at + 6, end));
          }
          buf = buf.subarray(end + 2);
        }
        pending = buf.length ? buf : undefined;
      });
      res.on("close", () => {
        if (!started) done(undefined);
        else if (!(sub as { closing?: boolean }).closing) closedUnexpectedly++;
      });
    });
    req.on("error", () => done(undefined));
    req.end();
  });
}

/** The Connect `WatchRequest` (JSON) of a subscriber's `/v1/watch` query: by app, by project+domain, or all apps. */
function watchRequestOf(query: string): unknown {
  const q = new URLSearchParams(query);
  const project = q.get("project");
  const domain = q.get("domain");
  const app = q.get("app");
  if (project && domain && app) return { appId: { project, domain, name: app } };
  if (project && domain) return { project: { name: project, domain } };
  return {};
}

/**
 * B6: a subscriber over Connect: `AppService/Watch` as a Connect server stream with the JSON codec
 * (`application/connect+json`, one HTTP/1.1 connection each). Every enveloped message goes to
 * `onMessage` (its JSON starts `{"createEvent"`/`{"updateEvent"` like a frame); the response
 * headers open it. Its snapshot (Connect Watch always sends one) comes before the `reset`.
 */
function openConnect(url: string, group: string, id: number, query: string, key: string): Promise<Sub | undefined> {
  return new Promise((resolve) => {
    let started = false;
    const done = (s: Sub | undefined) => {
      if (!started) {
        started = true;
        resolve(s);
      }
    };
    const json = Buffer.from(JSON.stringify(watchRequestOf(query)));
    const body = Buffer.alloc(5 + json.length);
    body.writeUInt32BE(json.length, 1);
    json.copy(body, 5);
    const req = httpRequest(`${url}/flyteidl2.app.AppService/Watch`, {
      method: "POST",
      agent: false,
      headers: { "content-type": "application/connect+json", "connect-protocol-version": "1", "content-length": body.length },
    });
    const sub: Sub = { id, group, key, ws: { close: () => req.destroy(), terminate: () => req.destroy() }, received: 0, lastSeq: 0, outOfOrder: 0, updatesOnly: true };
    req.on("response", (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume();
        done(undefined);
        return;
      }
      done(sub);
      let pending: Buffer | undefined;
      res.on("data", (chunk: Buffer) => {
        let buf = pending ? Buffer.concat([pending, chunk]) : chunk;
        while (buf.length >= 5) {
          const len = buf.readUInt32BE(1);
          if (buf.length < 5 + len) break;
          if ((buf[0]! & 2) === 0) onMessage(sub, buf.subarray(5, 5 + len));
          buf = buf.subarray(5 + len);
        }
        pending = buf.length ? buf : undefined;
      });
      res.on("close", () => {
        if (!(sub as { closing?: boolean }).closing) closedUnexpectedly++;
      });
    });
    req.on("error", () => done(undefined));
    req.end(body);
  });
}

function openOne(url: string, group: string, id: number, query: string, key: string, transport = "ws"): Promise<Sub | undefined> {
  if (transport === "sse") return openSse(url, group, id, query, key);
  if (transport === "connect") return openConnect(url, group, id, query, key);
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url}/v1/watch?${query}`, { perMessageDeflate: false });
    const sub: Sub = { id, group, key, ws, received: 0, lastSeq: 0, outOfOrder: 0 };
    let started = false;
    ws.on("message", (data: Buffer) => {
      if (!started) {
        started = true;
        resolve(sub);
        return;
      }
      onMessage(sub, data);
    });
    ws.on("error", () => {
      if (!started) {
        started = true;
        resolve(undefined);
      }
    });
    ws.on("close", () => {
      if (!started) {
        started = true;
        resolve(undefined);
      } else if (!(sub as { closing?: boolean }).closing) closedUnexpectedly++;
    });
  });
}

const inGroup = (group: string) => subs.filter((s) => s.group === group);

async function open(url: string, group: string, list: { id: number; query: string; key: string }[], transport?: string): Promise<Record<string, unknown>> {
  const t = performance.now();
  let failed = 0;
  const BATCH = 250;
  for (let i = 0; i < list.length; i += BATCH) {
    const got = await Promise.all(list.slice(i, i + BATCH).map((s) => openOne(url, group, s.id, s.query, s.key, transport)));
    for (const s of got) {
      if (s) subs.push(s);
      else failed++;
    }
  }
  return { n: inGroup(group).length, ms: Math.round(performance.now() - t), failed };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function expectedOf(sub: Sub, expected: Record<string, number>, groups: Record<string, number>, total: number): number {
  if (sub.key === "*") return total;
  return sub.key.split("/").length === 2 ? groups[sub.key] ?? 0 : expected[sub.key] ?? 0;
}

async function report(expected: Record<string, number>, group: string): Promise<Record<string, unknown>> {
  const subs = inGroup(group);
  const groups: Record<string, number> = {};
  let total = 0;
  for (const [k, n] of Object.entries(expected)) {
    const pd = k.split("/").slice(0, 2).join("/");
    groups[pd] = (groups[pd] ?? 0) + n;
    total += n;
  }
  const want = subs.reduce((s, sub) => s + expectedOf(sub, expected, groups, total), 0);
  const deadline = Date.now() + 15_000;
  let last = -1;
  let still = 0;
  for (;;) {
    const got = subs.reduce((s, sub) => s + Math.min(sub.received, expectedOf(sub, expected, groups, total)), 0);
    if (got >= want || Date.now() > deadline) break;
    // Nothing moving for 3 s: what is missing is lost (or coalesced away).
    if (got === last) {
      if (++still >= 30) break;
    } else still = 0;
    last = got;
    await new Promise((r) => setTimeout(r, 100));
  }
  let received = 0;
  let lost = 0;
  let extra = 0;
  let lossySubs = 0;
  let outOfOrder = 0;
  const byKind: Record<string, { subs: number; received: number; expected: number }> = {};
  for (const sub of subs) {
    const e = expectedOf(sub, expected, groups, total);
    const kind = sub.key === "*" ? "all" : sub.key.split("/").length === 2 ? "project" : "app";
    const b = (byKind[kind] ??= { subs: 0, received: 0, expected: 0 });
    b.subs++;
    b.received += sub.received;
    b.expected += e;
    received += sub.received;
    outOfOrder += sub.outOfOrder;
    if (sub.received < e) {
      lost += e - sub.received;
      lossySubs++;
    } else extra += sub.received - e;
  }
  const sorted = samples.slice(0, nSamples).sort();
  return {
    subscribers: subs.length,
    expected: want,
    received,
    lost,
    lossySubs,
    extra,
    outOfOrder,
    byKind,
    frames,
    heartbeats,
    closedUnexpectedly,
    latencyMs: {
      samples: nSamples,
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      p999: percentile(sorted, 99.9),
      max: nSamples ? sorted[nSamples - 1] : NaN,
    },
    cpuSeconds: cpuSeconds(),
  };
}

let capture: { ws: WebSocket; frames: string[] } | undefined;

function startCapture(url: string, query: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url}/v1/watch?${query}`, { perMessageDeflate: false });
    const c = { ws, frames: [] as string[] };
    let start: string | undefined;
    ws.on("message", (data: Buffer) => {
      if (start === undefined) {
        start = data.toString("utf8");
        capture = c;
        resolve({ start });
      } else if (data[2] === 0x75 /* u */ || data[2] === 0x63 /* c */) c.frames.push(data.toString("utf8"));
    });
    ws.on("error", reject);
  });
}

async function captured(n: number): Promise<Record<string, unknown>> {
  const c = capture;
  if (!c) throw new Error("captured without capture");
  const deadline = Date.now() + 30_000;
  while (c.frames.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  c.ws.close(1000);
  capture = undefined;
  return { frames: c.frames.slice(0, n) };
}

const say = (o: unknown) => process.stdout.write(JSON.stringify(o) + "\n");
const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  const group = (cmd.open ?? cmd.close ?? cmd.reset ?? cmd.report)?.group ?? "appwatch";
  if (cmd.open) say({ opened: await open(cmd.open.url, group, cmd.open.subs, cmd.open.transport) });
  else if (cmd.close) {
    const keep = cmd.close.keep as number;
    const mine = inGroup(group);
    for (const s of mine.slice(keep)) {
      (s as { closing?: boolean }).closing = true;
      s.ws.close(1000);
      subs.splice(subs.indexOf(s), 1);
    }
    say({ closed: { open: inGroup(group).length } });
  } else if (cmd.reset) {
    for (const s of inGroup(group)) {
      s.received = 0;
      s.outOfOrder = 0;
    }
    nSamples = 0;
    frames = 0;
    heartbeats = 0;
    say({ reset: true });
  } else if (cmd.report) say({ report: await report(cmd.report.expected, group) });
  else if (cmd.capture) say({ capturing: await startCapture(cmd.capture.url, cmd.capture.query) });
  else if (cmd.captured) say({ captured: await captured(cmd.captured.n) });
  else if (cmd.cpu) say({ cpu: cpuSeconds() });
  else if (cmd.quiet) {
    // B6: waits (≤ 30 s) until no frame has arrived for `ms` (a Connect snapshot is delivered).
    const deadline = Date.now() + 30_000;
    let last = -1;
    while (frames !== last && Date.now() < deadline) {
      last = frames;
      await new Promise((r) => setTimeout(r, cmd.quiet.ms ?? 500));
    }
    say({ quiet: { frames } });
  }
  else if (cmd.exit) break;
}
for (const s of subs) s.ws.terminate();
process.exit(0);
