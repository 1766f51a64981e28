/**
 * Where the time of the pruned decode path goes (no I/O): each step over the
 * same 20,000 bench lines, medians of 7 after a warm-up, in ms and × the
 * `JSON.parse` ceiling. Run on each runtime (BENCHMARKS.md cites it):
 * `node --import tsx bench/decoder/prune-breakdown.ts`, `npx deno run -A bench/decoder/prune-breakdown.ts`,
 * `npx bun bench/decoder/prune-breakdown.ts`.
 * @module
 */
import { generateEvents } from "../lib/data.ts";
import { JsonPruner } from "../../src/watch/prune.ts";
const { lines } = generateEvents(20000);
const enc = new TextEncoder(); const td = new TextDecoder();
const pr = new JsonPruner([["object", "metadata", "managedFields"], ["object", "spec"]]);
const bytes = lines.map((l) => enc.encode(l));
const pruned = bytes.map((b) => td.decode(pr.prune(b)));
const keptBytes = bytes.map((b) => pr.prune(b));
const nl = (() => { const all = new Uint8Array(bytes.reduce((a, b) => a + b.length + 1, 0)); let at = 0; for (const b of bytes) { all.set(b, at); at += b.length; all[at++] = 10; } return all; })();
const variants: Record<string, () => void> = {
  "JSON.parse full lines (ceiling)": () => { for (const l of lines) JSON.parse(l); },
  "TextDecoder.decode full lines": () => { for (const b of bytes) td.decode(b); },
  "newline scan (Uint8Array indexOf)": () => { let s = 0, i: number; while ((i = nl.indexOf(10, s)) !== -1) s = i + 1; },
  "prune walk only (JsonPruner.prune)": () => { for (const b of bytes) pr.prune(b); },
  "TextDecoder.decode kept bytes": () => { for (const b of keptBytes) td.decode(b); },
  "JSON.parse pruned lines": () => { for (const l of pruned) JSON.parse(l); },
  "pruneToString + JSON.parse (the pruned path)": () => { for (const b of bytes) JSON.parse(pr.pruneToString(b, td)); },
  "decode + JSON.parse (the unpruned path)": () => { for (const b of bytes) JSON.parse(td.decode(b)); },
};
const res: Record<string, number[]> = {};
for (let r = 0; r < 8; r++) for (const [k, f] of Object.entries(variants)) { const t = performance.now(); f(); (res[k] ??= []).push(performance.now() - t); }
const rt = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node";
const ceil = (() => { const s = res["JSON.parse full lines (ceiling)"]!.slice(1).sort((a, b) => a - b); return s[3]!; })();
for (const [k, v] of Object.entries(res)) { const s = v.slice(1).sort((a, b) => a - b); const m = s[3]!; console.log(`${rt}\t${k}\t${m.toFixed(0)} ms\t${(m / ceil).toFixed(2)}`); }
