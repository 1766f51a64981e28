/**
 * What the B3 (fan-out) and B4 (conversion) reports share: the per-runtime JSON results under
 * bench/results/ (`<prefix>-<runtime>.json`), the hand-written notes section kept between the
 * `<!-- notes:start -->` and `<!-- notes:end -->` markers of an existing Markdown file, number
 * formats and the machine line.
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

export const RUNTIMES = ["node", "deno", "bun"] as const;
export const TITLE: Record<string, string> = { node: "Node", deno: "Deno", bun: "Bun" };
// deno-lint-ignore no-explicit-any
export type Json = any;

export function load(dir: string, prefix: string): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const rt of RUNTIMES) {
    const f = join(dir, `${prefix}-${rt}.json`);
    if (existsSync(f)) out[rt] = JSON.parse(readFileSync(f, "utf8"));
  }
  return out;
}

export function notes(file: string, fallback: string): string {
  if (existsSync(file)) {
    const text = readFileSync(file, "utf8");
    const a = text.indexOf("<!-- notes:start -->");
    const b = text.indexOf("<!-- notes:end -->");
    if (a >= 0 && b > a) return text.slice(a, b + "<!-- notes:end -->".length);
  }
  return `<!-- notes:start -->\n${fallback}\n<!-- notes:end -->`;
}

export const ms = (v: number | undefined): string => (v === undefined || Number.isNaN(v) ? "–" : v < 10 ? v.toFixed(1) : String(Math.round(v)));
export const int = (v: number): string => Math.round(v).toLocaleString("en-US");
export const kib = (b: number): string => (b / 1024).toFixed(1);
export const mib = (b: number): string => (b / 2 ** 20).toFixed(1);

export function machineLine(r: Json): string {
  return `${r.machine.cores} cores (${r.machine.cpu}), ${r.machine.memoryGiB} GiB RAM, ${r.machine.platform}`;
}
