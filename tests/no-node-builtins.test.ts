/**
 * No `node:` built-ins in the engine (src/watch), the Flyte layer (src/flyte) and the service core
 * (src/service without adapters/, server.ts and the settings' file and flag readers), nor anywhere
 * the Cloudflare entry reaches: every module of these folders is read, and the static import graph is walked from
 * src/worker/cloudflare.ts (relative imports followed, packages listed). Text-level, so it runs
 * alike on Node, Deno and Bun; tests/worker-cloudflare.test.ts checks the bundle esbuild makes too.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
/** Runtime-specific by design: adapters, the server, and the settings' file and flag readers (node:fs, node:util). */
const EXEMPT = [/^src\/service\/adapters\//, /^src\/service\/server\.ts$/, /^src\/service\/settings\/(file|flags)\.ts$/];

/** Every static `import … from "x"`, `export … from "x"`, `import "x"` and literal `import("x")` of `source` (comments removed first). */
export function importsOf(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
  const out: string[] = [];
  const re = /(?:^|[;\s])(?:import|export)\s+(?:type\s+)?(?:[\w*\s{},$]*?\s+from\s+)?["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;
  for (const m of code.matchAll(re)) out.push(m[1] ?? m[2]!);
  return out;
}

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []
  );
}

test("importsOf finds every import form, and none in comments or strings of code", () => {
  const src = [
    `import { a } from "node:fs";`,
    `import type { B } from './b.ts';`,
    `import * as v from "valibot";`,
    `export { c } from "../c.ts";`,
    `import "./side.ts";`,
    `const m = await import("node:crypto");`,
    `// import { x } from "node:http";`,
    `/* import { y } from "node:http2"; */`,
    `import {\n  d,\n  e,\n} from "./multi.ts";`,
  ].join("\n");
  assert.deepEqual(importsOf(src).sort(), ["../c.ts", "./b.ts", "./multi.ts", "./side.ts", "node:crypto", "node:fs", "valibot"].sort());
});

test("src/watch, src/flyte and the service core import no node: built-in", () => {
  const offenders: string[] = [];
  for (const file of [...filesUnder("src/watch"), ...filesUnder("src/flyte"), ...filesUnder("src/service")]) {
    if (EXEMPT.some((re) => re.test(file))) continue;
    for (const spec of importsOf(readFileSync(join(ROOT, file), "utf8"))) if (spec.startsWith("node:")) offenders.push(`${file}: ${spec}`);
  }
  assert.deepEqual(offenders, []);
});

test("nothing the Cloudflare entry reaches imports a node: built-in, the sandbox or kubeconfig reading", () => {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const bad: string[] = [];
  const walk = (file: string, from: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const rel = relative(ROOT, file);
    if (/^src\/(sandbox\/|kube\/(cluster-config|kubeconfig|credentials|exec|transport|connect)\.ts)/.test(rel)) bad.push(`${rel} (from ${from})`);
    for (const spec of importsOf(readFileSync(file, "utf8"))) {
      if (spec.startsWith("node:")) bad.push(`${rel}: ${spec}`);
      else if (spec.startsWith(".")) walk(resolve(dirname(file), spec), rel);
      else packages.add(spec);
    }
  };
  walk(join(ROOT, "src/worker/cloudflare.ts"), "entry");
  assert.ok(seen.size > 30, `walked ${seen.size} modules`);
  assert.ok([...seen].some((f) => f.endsWith("src/flyte/naming.ts")) && [...seen].some((f) => f.endsWith("src/flyte/proto/json-decoder.ts")));
  assert.deepEqual(bad, []);
  const nodeOnly = [...packages].filter((p) => /^(ws|undici|@hono\/node-server|@connectrpc\/connect-node)(\/|$)/.test(p));
  assert.deepEqual(nodeOnly, [], "Node-only packages");
});
