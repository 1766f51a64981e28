/**
 * The house rules of `src/`, checked from the files (docs/architecture.md, "Layers"):
 * - no import circles, type-only imports included;
 * - no import from a lower layer into a higher one (the layer order below);
 * - `runtimeName()` (which runtime are we on?) only in adapters and entries;
 * - no module-level mutable state: no top-level `let`/`var`, no top-level container that
 *   starts empty (a cache or a registry), except the memos listed in {@link ALLOWED_STATE}.
 * Each checker is also run on a small made-up tree, so the test can fail.
 * @module
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Layers, bottom up: a module may import its own layer or any below it. A path matches the
 * longest prefix listed.
 */
const LAYERS: readonly (readonly string[])[] = [
  ["src/log.ts", "src/prng.ts", "src/version.ts", "src/yaml-error.ts", "src/runtime.ts", "src/base64url.ts", "src/bytes.ts", "src/visible.ts"],
  ["src/kube/"],
  ["src/watch/"],
  ["src/flyte/"],
  // The service core, and the adapter contract it is written against (adapters/types.ts).
  ["src/service/", "src/service/adapters/types.ts"],
  // Runtime adapters, and startService, which picks one and listens.
  ["src/service/adapters/", "src/service/server.ts", "src/serve.ts"],
  ["src/sandbox/", "src/client/"],
  // Entries.
  ["src/worker/", "src/cli.ts", "src/main.ts", "src/bin.ts", "mod.ts"],
];

/** Where `runtimeName()` may be imported: the adapters, the kube transport (its fetch per runtime), entries. */
const RUNTIME_CHECKS = ["src/service/adapters/", "src/kube/transport.ts", "src/cli.ts", "src/worker/", "src/runtime.ts"];

/**
 * Module-level memos allowed, each with why. All are WeakMaps keyed by an immutable event: the
 * value is a function of the key (its encoding), held only as long as the event, shared by every
 * subscriber so a frame is encoded once (docs/architecture.md, "Module state").
 */
const ALLOWED_STATE = new Map<string, string>([
  ["src/service/frames.ts:eventJson", "an event's JSON, once per event"],
  ["src/service/frames.ts:tokenFrames", "an event's tokened frame, shared by the live subscribers of one change"],
  ["src/service/transports.ts:sseEncoded", "a frame's SSE bytes, once per frame"],
  ["src/service/connect/frames.ts:watchMessages", "an event's protobuf message, once per event"],
  ["src/service/connect/frames.ts:jsonFrames", "an event's Connect JSON envelope, once per event"],
  ["src/service/connect/frames.ts:binaryFrames", "an event's binary envelope, once per event"],
]);

/** Files not checked for state: generated, or browser code (one page per tab, not a module of the service). */
const NOT_MODULES = ["src/service/board/client.js", "src/service/board/client.gen.ts"];

type Sources = ReadonlyMap<string, string>;
interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

function readSources(): Sources {
  const out = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir))) {
      const path = `${dir}/${name}`;
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (/\.(ts|js)$/.test(name)) out.set(path, readFileSync(join(ROOT, path), "utf8"));
    }
  };
  walk("src");
  out.set("mod.ts", readFileSync(join(ROOT, "mod.ts"), "utf8"));
  return out;
}

/** Relative imports and re-exports, static and dynamic (`import("./x.ts")` with a literal). */
export function importsOf(files: Sources): Edge[] {
  const edges: Edge[] = [];
  const re = /^\s*(?:import|export)\s+(type\s+)?(?:[^;'"]*?\s+from\s+)?["'](\.[^"']+)["']|\bimport\(\s*["'](\.[^"']+)["']\s*\)/gm;
  for (const [from, text] of files) {
    for (const m of text.matchAll(re)) {
      const spec = m[2] ?? m[3]!;
      const to = relative(ROOT, resolve(ROOT, dirname(from), spec)).split("\\").join("/");
      edges.push({ from, to, typeOnly: m[1] !== undefined });
    }
  }
  return edges;
}

/** Every cycle's files (strongly connected components of more than one file, or a self-import). */
export function circles(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1 || (next.get(v) ?? []).includes(v)) out.push(c.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** The layer of a file: the one whose listed prefix matching it is longest. */
export function layerOf(path: string, layers = LAYERS): number {
  let best = -1;
  let length = -1;
  layers.forEach((prefixes, layer) => {
    for (const p of prefixes) {
      if ((p.endsWith("/") ? path.startsWith(p) : path === p) && p.length > length) {
        best = layer;
        length = p.length;
      }
    }
  });
  return best;
}

/** Imports that go up the layer order (or into a file no layer lists). */
export function upward(edges: readonly Edge[], layers = LAYERS): string[] {
  const out: string[] = [];
  for (const e of edges) {
    const from = layerOf(e.from, layers);
    const to = layerOf(e.to, layers);
    if (from < 0 || to < 0) out.push(`${e.from} → ${e.to}: not in any layer`);
    else if (to > from) out.push(`${e.from} (layer ${from}) → ${e.to} (layer ${to})`);
  }
  return out;
}

/** Top-level `let`/`var`, and top-level containers that start empty, as `file:name`. */
export function moduleState(files: Sources): string[] {
  const out: string[] = [];
  const re = /^(?:export\s+)?(?:(?:let|var)\s+([A-Za-z_$][\w$]*)|const\s+([A-Za-z_$][\w$]*)\s*(?::[^=\n]+)?=\s*(?:new\s+(?:Map|Set|WeakMap|WeakSet|Array)\s*(?:<[^\n]*>)?\s*\(\s*\)|\[\s*\]))/gm;
  for (const [file, text] of files) {
    for (const m of text.matchAll(re)) out.push(`${file}:${m[1] ?? m[2]}`);
  }
  return out;
}

describe("the structure of src/", () => {
  const files = readSources();
  const modules = new Map([...files].filter(([f]) => !NOT_MODULES.includes(f)));
  const edges = importsOf(modules);

  test("the import graph is read (every src module but the entries is imported by another)", () => {
    assert.ok(edges.length > 300, `${edges.length} imports found`);
    const imported = new Set(edges.map((e) => e.to));
    for (const f of ["src/watch/reflector.ts", "src/flyte/journal.ts", "src/service/frames.ts", "src/flyte/proto/json-print.ts"]) {
      assert.ok(imported.has(f), `${f} is imported`);
    }
    for (const e of edges) assert.ok(files.has(e.to), `${e.from} imports ${e.to}, which does not exist`);
  });

  test("no import circles, type-only imports included", () => {
    assert.deepEqual(circles(edges), []);
  });

  test("no import goes up the layers (kube < watch < flyte < service < adapters < sandbox, client < entries)", () => {
    for (const f of modules.keys()) assert.ok(layerOf(f) >= 0, `${f} is in no layer: add it to LAYERS`);
    assert.deepEqual(upward(edges), []);
  });

  test("runtimeName() only in adapters and entries", () => {
    const users = edges
      .filter((e) => e.to === "src/runtime.ts" && /\bruntimeName\b/.test(modules.get(e.from)!))
      .map((e) => e.from)
      .filter((f) => !RUNTIME_CHECKS.some((p) => (p.endsWith("/") ? f.startsWith(p) : f === p)));
    assert.deepEqual(users, []);
  });

  test("no module-level mutable state but the listed per-event memos", () => {
    const found = moduleState(modules);
    assert.deepEqual(found.filter((s) => !ALLOWED_STATE.has(s)), []);
    // The list stays true: each allowed memo still exists, and is a WeakMap (held only as long as its event).
    for (const name of ALLOWED_STATE.keys()) {
      assert.ok(found.includes(name), `${name} is allowed but no longer there: drop it from ALLOWED_STATE`);
      const [file, id] = name.split(":") as [string, string];
      assert.match(modules.get(file)!, new RegExp(`const ${id} = new WeakMap<`), `${name} is a WeakMap`);
    }
  });

  test("the checkers find what they look for (a made-up tree with a circle, an upward import and module state)", () => {
    const fake: Sources = new Map([
      ["src/watch/a.ts", `import type { B } from "./b.ts";\nlet cursor = 0;\nexport const cache = new Map<string, number>();\nconst TABLE = new Set(["x"]);`],
      ["src/watch/b.ts", `export { a } from "./a.ts";\nimport { App } from "../flyte/app.ts";`],
      ["src/flyte/app.ts", `const later = () => import("../watch/a.ts");\nexport var count = [];`],
    ]);
    const e = importsOf(fake);
    assert.deepEqual(e.map((x) => `${x.from}→${x.to}${x.typeOnly ? " (type)" : ""}`), [
      "src/watch/a.ts→src/watch/b.ts (type)",
      "src/watch/b.ts→src/watch/a.ts",
      "src/watch/b.ts→src/flyte/app.ts",
      "src/flyte/app.ts→src/watch/a.ts",
    ]);
    assert.deepEqual(circles(e), [["src/flyte/app.ts", "src/watch/a.ts", "src/watch/b.ts"]]);
    assert.deepEqual(upward(e), ["src/watch/b.ts (layer 2) → src/flyte/app.ts (layer 3)"]);
    assert.deepEqual(moduleState(fake), ["src/watch/a.ts:cursor", "src/watch/a.ts:cache", "src/flyte/app.ts:count"]);
  });
});
