#!/usr/bin/env node
// `npm run build`: the npm package's dist/ from scratch (no stale modules from an earlier build).
//   1. tsc -p tsconfig.build.json: JS (`.ts` import specifiers rewritten to `.js` by
//      rewriteRelativeImportExtensions) and `.d.ts`;
//   2. the `.d.ts` keep the sources' `./x.ts` specifiers (tsc does not rewrite declarations):
//      they become `./x.js` too, which every TypeScript resolves (TypeScript before 5.0 and other
//      .d.ts readers do not resolve `.ts` there, and the types would silently turn into `any`).
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const DIST = join(ROOT, "dist");

const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");
// `npm pack` runs this as `prepack`: in a fresh clone without `npm ci` there is no TypeScript to
// build with, and Node's "Cannot find module" stack trace would not say so.
if (!existsSync(TSC)) {
  console.error("build: TypeScript is not installed (node_modules/typescript is missing), so dist/ cannot be built.\nRun `npm ci` first, then `npm pack` (or `npm run build`) again.");
  process.exit(1);
}
rmSync(DIST, { recursive: true, force: true });
const tsc = spawnSync(process.execPath, [TSC, "-p", join(ROOT, "tsconfig.build.json")], { stdio: "inherit" });
if (tsc.status !== 0) {
  console.error(`build: tsc -p tsconfig.build.json exited ${tsc.status ?? tsc.signal}`);
  process.exit(1);
}

// `from "./a.ts"`, `import("../b.ts")`, `import "./c.ts"`: relative specifiers only.
const RELATIVE_TS = /((?:\bfrom|\bimport)\s*\(?\s*)(["'])(\.{1,2}\/[^"']*?)\.ts\2/g;
let files = 0;
for (const entry of readdirSync(DIST, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith(".d.ts")) continue;
  const file = join(entry.parentPath, entry.name);
  const text = readFileSync(file, "utf8");
  const out = text.replace(RELATIVE_TS, (_, head, q, path) => `${head}${q}${path}.js${q}`);
  if (out !== text) {
    writeFileSync(file, out);
    files++;
  }
}
console.log(`build: dist/ (${files} .d.ts files with their import specifiers set to .js)`);
