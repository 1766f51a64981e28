/**
 * Differential check: both WASM pruners ({@link WasmJsonPruner}: JS walk +
 * WASM skip; {@link WasmWalkPruner}: the whole walk in WASM) must return
 * byte for byte what `src/watch/prune.ts`'s `JsonPruner` returns — on the
 * B1 bench lines (and list pages made of them), and on tricky inputs:
 * escapes and `\"` at every offset around the 16- and 64-byte block
 * boundaries, unicode, brackets inside strings, whitespace after strings,
 * deep nesting, every truncation and many one-byte mutations of real lines
 * (malformed input must come back unchanged, as from `JsonPruner`), and a
 * seeded random JSON-ish fuzz. The bench runs it first and fails on any
 * mismatch; `node --import tsx bench/wasm-scan/check.ts` (or Deno/Bun) runs
 * it alone.
 * @module
 */
import process from "node:process";
import { JsonPruner, listPathsOf, type PrunePaths } from "../../src/watch/prune.ts";
import { generateEvents } from "../lib/data.ts";
import { WasmJsonPruner, WasmWalkPruner } from "./pruner.ts";
import { ScanWasm } from "./wasm.ts";

const WATCH: PrunePaths = [["object", "metadata", "managedFields"], ["object", "spec"]];
const enc = new TextEncoder();

function same(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Tricky documents (strings): each is pruned with several path sets. */
function trickyDocs(sample: string): string[] {
  const docs: string[] = [];
  const pads = (k: number) => "a".repeat(k);
  for (let k = 0; k < 140; k++) {
    // `\"`, `\\`, `\u` escapes and brackets inside strings at every offset around the block boundaries.
    docs.push(`{"object":{"spec":{"s":"${pads(k)}\\"}]{[\\\\","t":["${pads(k % 17)}\\u00e9\\/x"]},"status":1}}`);
    docs.push(`{"object":{"spec":["${pads(k)}\\\\","${pads(k)}\\\\\\"x"],"status":{}}}`);
    docs.push(`{"object":{"spec":{"${pads(k)}":"]}\\"{[", "b" : [1, 2 ,{ "c" :"d" } ] },"z":0}}`);
    docs.push(`{"object":{"metadata":{"managedFields":[{"${pads(k)}":{}}],"name":"x"},"spec":{"a":"${pads(k)}é€😀"}}}`);
    docs.push(`{"object":{"spec":{"a":"${pads(k)}"}  ,"x":1}}`);
    docs.push(`{"object":{"spec":{"a":"${pads(k)}" }}}`); // whitespace after a closing quote
    docs.push(`{"object":{"spec":{"a":"${pads(k)}"\n,"b":2}}}`);
    // malformed: bad escapes, unterminated strings, mismatched brackets, bare bytes, a string followed by a string
    docs.push(`{"object":{"spec":{"a":"${pads(k)}\\x"}}}`);
    docs.push(`{"object":{"spec":{"a":"${pads(k)}\\u12g4"}}}`);
    docs.push(`{"object":{"spec":{"a":"${pads(k)}\\u12"}}}`);
    docs.push(`{"object":{"spec":{"a":"${pads(k)}}}}`);
    docs.push(`{"object":{"spec":{"a":[${"1,".repeat(k)}1}}}}`);
    docs.push(`{"object":{"spec":{"a":${"1".repeat(k)}x}}}`);
    docs.push(`{"object":{"spec":{"a":"${pads(k)}""b"}}}`);
    docs.push(`{"object":{"spec":{"a":"${pads(k)}" "b"}}}`);
    docs.push(`{"object":{"spec":{"a":"${pads(k)}"}`);
    docs.push(`{"object":{"spec":{"a":"${pads(k)}\\`);
    docs.push(`{"object":{"spec":{"a":[${"[".repeat(k * 4)}${"]".repeat(k * 4)}]}}}`);
  }
  // escaped shallow keys (JsonPruner decodes them; the WASM walk hands them back to JavaScript)
  docs.push(`{"object":{"sp\\u0065c":{"a":1},"x":1}}`, `{"obj\\u0065ct":{"spec":1}}`, `{"object":{"a\\"b":1,"spec":[2]}}`);
  docs.push(`{"object":{"sp\\x":1,"spec":{}}}`, `{"object":{"metadata":{"manag\\u0065dFields":[1]},"spec":0}}`, `{"object":{"\\/spec":1}}`);
  // root arrays, duplicates, empty containers, whitespace everywhere
  docs.push(`[{"spec":1},{"spec":[2,3]},{"x":{"spec":4}}]`, `[]`, `[ ]`, ` {"object" : { "spec" : { } , "spec" : [ ] } } `, `{"object":{"spec":1,"spec":2}}`);
  docs.push(`{"items":[{"spec":1},2,"x",[3],{"metadata":{"managedFields":[]}}]}`, `{"items":[,]}`, `{"items":[1,]}`, `{"items":{"spec":1}}`);
  docs.push(`{"object":{"spec":${"[".repeat(511)}${"]".repeat(511)}}}`);
  docs.push(`{"object":{"spec":${"[".repeat(512)}${"]".repeat(512)}}}`);
  docs.push(`{"object":{"spec":${"[".repeat(513)}${"]".repeat(513)}}}`);
  docs.push(`{"object":{"spec":${"{\"a\":".repeat(600)}1${"}".repeat(600)}}}`);
  // Every truncation of a real line, and one-byte changes at every position of its first 3,000 bytes.
  for (let cut = 0; cut <= sample.length; cut++) docs.push(sample.slice(0, cut));
  const swaps = ['"', "\\", "{", "}", "[", "]", " ", "x", ",", ":", "é"];
  for (let at = 0; at < Math.min(sample.length, 3000); at++) {
    docs.push(sample.slice(0, at) + swaps[at % swaps.length] + sample.slice(at + 1));
    if (at % 7 === 0) docs.push(sample.slice(0, at) + sample.slice(at + 1));
  }
  return docs;
}

/** Random JSON-ish documents: mostly valid, with random damage. */
function fuzzDocs(count: number): string[] {
  const rnd = seeded(1202);
  const atoms = ['"a"', '"\\""', '"\\\\"', '"x\\u00e9y"', '"]}"', '"{["', "1", "-2.5e3", "true", "null", '""', '"é😀"', `"${"b".repeat(70)}"`];
  const value = (depth: number): string => {
    const r = rnd();
    if (depth > 6 || r < 0.35) return atoms[Math.floor(rnd() * atoms.length)]!;
    const ws = () => (rnd() < 0.15 ? [" ", "\n", "\t", "  "][Math.floor(rnd() * 4)]! : "");
    const n = Math.floor(rnd() * 6);
    const parts: string[] = [];
    if (r < 0.7) {
      for (let i = 0; i < n; i++) parts.push(`${ws()}"k${Math.floor(rnd() * 5)}${"q".repeat(Math.floor(rnd() * 40))}"${ws()}:${ws()}${value(depth + 1)}${ws()}`);
      return `{${parts.join(",")}}`;
    }
    for (let i = 0; i < n; i++) parts.push(`${ws()}${value(depth + 1)}${ws()}`);
    return `[${parts.join(",")}]`;
  };
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    let d = `{"object":{"metadata":{"name":"n","managedFields":${value(1)}},"spec":${value(0)},"status":${value(2)}}}`;
    if (rnd() < 0.4) {
      const at = Math.floor(rnd() * d.length);
      const junk = ['"', "\\", "{", "}", "[", "]", "x", "", ",", ":"][Math.floor(rnd() * 10)]!;
      d = d.slice(0, at) + junk + d.slice(at + 1);
    }
    out.push(d);
  }
  return out;
}

export interface CheckResult {
  cases: number;
  mismatches: string[];
  ms: number;
}

/** Runs the whole comparison; never throws on a mismatch (the caller decides), lists up to 10. */
export function differentialCheck(scan: ScanWasm, benchLines?: readonly string[]): CheckResult {
  const t0 = performance.now();
  const lines = benchLines ?? generateEvents(2000).lines;
  const sets: PrunePaths[] = [WATCH, [["object", "spec"]], [["object", "metadata"]], [["object", "status"], ["object", "spec", "a"]], [["nope"]], [["*", "spec"]], [["items", "*"]], listPathsOf(WATCH)];
  type Pair = readonly [JsonPruner, readonly WasmJsonPruner[]];
  const pairs: Pair[] = sets.map((p) => [new JsonPruner(p), [new WasmJsonPruner(p, scan), new WasmWalkPruner(p, scan)]]);
  const mismatches: string[] = [];
  let cases = 0;
  const td = new TextDecoder();
  const compare = (what: string, bytes: Uint8Array, ps: readonly Pair[] = pairs) => {
    for (const [js, others] of ps) {
      const a = js.prune(bytes);
      for (const wasm of others) {
        cases++;
        const b = wasm.prune(bytes);
        let ok = same(a, b);
        if (ok && cases % 3 === 0) ok = wasm.pruneToString(bytes, td) === td.decode(a);
        if (!ok && mismatches.length < 10) {
          mismatches.push(`${what} (${wasm.constructor.name}, paths ${JSON.stringify(js.paths)}): JsonPruner kept ${a.length} bytes, WASM ${b.length}; input ${JSON.stringify(td.decode(bytes.subarray(0, 300)))}`);
        }
      }
    }
  };
  // 1. the bench lines (watch paths only: that is what the bench measures) and list pages of them.
  const watchPair = [pairs[0]!];
  for (let i = 0; i < lines.length; i++) compare(`bench line ${i}`, enc.encode(lines[i]!), watchPair);
  const list = listPathsOf(WATCH);
  const listPair: Pair[] = [[new JsonPruner(list), [new WasmJsonPruner(list, scan), new WasmWalkPruner(list, scan)]]];
  for (let p = 0; p < Math.min(lines.length, 2000); p += 250) {
    const items = lines.slice(p, p + 250).map((l) => JSON.stringify((JSON.parse(l) as { object: unknown }).object));
    compare(`list page ${p}`, enc.encode(`{"kind":"ServiceList","metadata":{"resourceVersion":"1"},"items":[${items.join(",")}]}`), listPair);
  }
  // 2. tricky and malformed inputs, 3. fuzz: with every path set.
  const tricky = trickyDocs(lines[0]!);
  for (let i = 0; i < tricky.length; i++) compare(`tricky ${i}`, enc.encode(tricky[i]!));
  const fuzz = fuzzDocs(20000);
  for (let i = 0; i < fuzz.length; i++) compare(`fuzz ${i}`, enc.encode(fuzz[i]!));
  return { cases, mismatches, ms: performance.now() - t0 };
}

if (process.argv[1]?.endsWith("bench/wasm-scan/check.ts")) {
  const { scan, buildMs } = await ScanWasm.build();
  const r = differentialCheck(scan);
  console.log(`built in ${buildMs.toFixed(0)} ms; ${r.cases} comparisons in ${r.ms.toFixed(0)} ms; ${r.mismatches.length} mismatches`);
  for (const m of r.mismatches) console.log(m);
  if (r.mismatches.length > 0) process.exit(1);
}
