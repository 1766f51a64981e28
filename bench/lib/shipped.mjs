// Node benchmarks measure appwatch as it ships, not as tsx runs it:
//
//   node --import tsx --import ./bench/lib/shipped.mjs bench/fanout/fanout.ts
//
// tsx compiles with esbuild's `keepNames` (hard-coded), which wraps every function it creates in
// `Object.defineProperty(fn, "name", …)`: each closure gets a dictionary-mode property store
// (256 B in a heap snapshot) and costs a define call when it is created. The forms users run on
// Node have none of it: the npm package (`dist/`, tsc) and the image (Node 24 type stripping).
// Measured (B3 idle, 4,000 subscribers, Node 20): 21.7 → 18.1 KiB JS heap per subscriber.
//
// This hook redirects the repo's `mod.ts` and `src/**/*.ts` to their `dist/**/*.js` (built here
// by `scripts/build-package.mjs` when missing or older than a source file); the bench's own code
// still runs through tsx. The first process builds; the children it spawns inherit
// APPWATCH_SHIPPED_BUILT and only check. Deno and Bun run the sources as they ship.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { register } from "node:module";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const STAMP = join(ROOT, "dist", "mod.js");

function newestSource() {
  let newest = statSync(join(ROOT, "mod.ts")).mtimeMs;
  for (const e of readdirSync(join(ROOT, "src"), { recursive: true, withFileTypes: true })) {
    if (e.isFile() && e.name.endsWith(".ts")) newest = Math.max(newest, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return newest;
}

const stale = () => !existsSync(STAMP) || statSync(STAMP).mtimeMs < newestSource();
if (stale()) {
  if (process.env.APPWATCH_SHIPPED_BUILT) throw new Error("bench/lib/shipped.mjs: dist/ is older than src/ (edited during the run?): run `npm run build`");
  execFileSync(process.execPath, [join(ROOT, "scripts", "build-package.mjs")], { stdio: ["ignore", "ignore", "inherit"] });
}
process.env.APPWATCH_SHIPPED_BUILT = "1";

const src = pathToFileURL(join(ROOT, "src")).href + "/";
const mod = pathToFileURL(join(ROOT, "mod.ts")).href;
const dist = pathToFileURL(join(ROOT, "dist")).href + "/";
const hooks = `
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  const url = r.url.split("?")[0];
  if (url === ${JSON.stringify(mod)}) return { ...r, url: ${JSON.stringify(dist + "mod.js")}, format: "module" };
  if (url.startsWith(${JSON.stringify(src)}) && url.endsWith(".ts")) {
    return { ...r, url: ${JSON.stringify(dist + "src/")} + url.slice(${src.length}, -3) + ".js", format: "module" };
  }
  return r;
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
