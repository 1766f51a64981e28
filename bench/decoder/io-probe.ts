/**
 * Node-only I/O probe (BENCHMARKS.md cites it): the 20,000-event watch body
 * from the bench server, drained and decoded with pruning, through global
 * `fetch`, undici 7 `fetch`, `undici.request` and `node:http`; medians of 5
 * after a warm-up. `node --import tsx bench/decoder/io-probe.ts`.
 * @module
 */
import process from "node:process";
import { startBenchServer } from "./server-process.ts";
import { BENCH_PATH } from "../lib/data.ts";
import { ndjsonValues } from "../../src/watch/ndjson.ts";
import { fetch as undiciFetch, request, Agent } from "undici";
import http from "node:http";
import { Readable } from "node:stream";
const server = await startBenchServer(20000);
const url = `${server.meta.url}${BENCH_PATH}?watch=1`;
const agent = new Agent();
const PR = [["object", "metadata", "managedFields"], ["object", "spec"]];
const drainWeb = async (body: ReadableStream<Uint8Array>) => { const r = body.getReader(); let n = 0; for (;;) { const { value, done } = await r.read(); if (done) return n; n += value.length; } };
const httpGet = () => new Promise<http.IncomingMessage>((res, rej) => http.get(url, res).on("error", rej));
const v: Record<string, () => Promise<number>> = {
  "global fetch: drain": async () => drainWeb((await fetch(url)).body!),
  "undici 7 fetch: drain": async () => drainWeb((await undiciFetch(url, { dispatcher: agent })).body! as unknown as ReadableStream<Uint8Array>),
  "undici.request: drain (Node Readable)": async () => { const r = await request(url, { dispatcher: agent }); let n = 0; for await (const c of r.body) n += (c as Buffer).length; return n; },
  "node:http: drain": async () => { const r = await httpGet(); let n = 0; for await (const c of r) n += (c as Buffer).length; return n; },
  "global fetch → ndjsonValues(prune)": async () => { let n = 0; for await (const _ of ndjsonValues((await fetch(url)).body!, { prune: PR })) n++; return n; },
  "undici 7 fetch → ndjsonValues(prune)": async () => { let n = 0; for await (const _ of ndjsonValues((await undiciFetch(url, { dispatcher: agent })).body! as unknown as ReadableStream<Uint8Array>, { prune: PR })) n++; return n; },
  "node:http → Readable.toWeb → ndjsonValues(prune)": async () => { let n = 0; for await (const _ of ndjsonValues(Readable.toWeb(await httpGet()) as unknown as ReadableStream<Uint8Array>, { prune: PR })) n++; return n; },
};
const res: Record<string, number[]> = {};
for (let r = 0; r < 6; r++) for (const [k, f] of Object.entries(v)) { const t = performance.now(); await f(); (res[k] ??= []).push(performance.now() - t); }
for (const [k, x] of Object.entries(res)) { const s = x.slice(1).sort((a, b) => a - b); console.log(`${k}\t${s[2]!.toFixed(0)} ms`); }
await server.close(); process.exit(0);
