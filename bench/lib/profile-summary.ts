/**
 * Prints the top self-time functions of a V8 `.cpuprofile` (node --cpu-prof, deno --v8-flags=--cpu-prof):
 * `node --import tsx bench/lib/profile-summary.ts <file.cpuprofile> [top=25]`.
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
const file = process.argv[2];
if (!file) throw new Error("usage: profile-summary.ts <file.cpuprofile> [top]");
const top = Number(process.argv[3] ?? 25);
const prof = JSON.parse(readFileSync(file, "utf8")) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
let total = 0;
for (let i = 0; i < prof.samples.length; i++) {
  const n = byId.get(prof.samples[i]!)!;
  const dt = prof.timeDeltas[i] ?? 0;
  total += dt;
  const f = n.callFrame;
  const key = `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(node_modules\/)?/, "$1")}:${f.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + dt);
}
const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
console.log(`total ${(total / 1000).toFixed(0)} ms sampled`);
for (const [k, us] of rows) console.log(`${((us / total) * 100).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`);
