/**
 * What a user of a clone meets first in the repo itself (issue 24, items 9 and 10): the docs cite
 * only files that ship, the README's docs index and Layout table are whole, `npm pack` without
 * `npm ci` says what to do, its tarball is ignored by git, the `jq` recipe has npm's `--silent`,
 * and the sandbox entry's JSDoc imports what npm users import.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const read = (p: string) => readFileSync(join(ROOT, p), "utf8");
const DOCS = readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).sort();
const PAGES = ["README.md", "examples/README.md", ...DOCS.map((f) => `docs/${f}`)];

test("docs cite only files that ship: every relative link resolves, nothing outside the repo is named", () => {
  const bad: string[] = [];
  for (const page of PAGES) {
    const text = read(page);
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^(https?:|mailto:|#)/.test(target)) continue;
      const path = resolve(ROOT, dirname(page), target.split("#")[0]!);
      if (!path.startsWith(ROOT + "/") || !existsSync(path)) bad.push(`${page}: link to ${target}`);
    }
    for (const outside of ["../shared/", "kubernetes-watch.md", "runtimes.md"]) {
      if (text.includes(outside)) bad.push(`${page}: names ${outside}, which is not in the repo`);
    }
  }
  assert.deepEqual(bad, []);
});

test("the README's docs index names every doc, and its Layout table is one table", () => {
  const readme = read("README.md");
  const index = readme.slice(readme.indexOf("\nDocs: "), readme.indexOf("\n\n", readme.indexOf("\nDocs: ")));
  assert.deepEqual(DOCS.filter((f) => !index.includes(`(docs/${f})`)), [], "docs missing from the README's index");
  const layout = readme.slice(readme.indexOf("## Layout\n"));
  const table = layout.split("\n\n")[1]!.split("\n");
  assert.ok(table.every((l) => l.startsWith("|")), `the Layout table is broken:\n${table.join("\n")}`);
  for (const row of ["`src/watch/machine.ts`", "`tests/cluster/`", "`deploy/`, `Dockerfile`"]) assert.ok(table.some((l) => l.includes(row)), `Layout lacks ${row}`);
});

test("npm's banner and jq: the README pipes `npm run --silent watch -- --output json`", () => {
  assert.match(read("README.md"), /npm run --silent watch -- --output json \| jq /);
});

test("npm pack without npm ci: the build says to run npm ci, with no stack trace", () => {
  const dir = mkdtempSync(join(tmpdir(), "appwatch-nobuild-"));
  try {
    mkdirSync(join(dir, "scripts"));
    copyFileSync(join(ROOT, "scripts", "build-package.mjs"), join(dir, "scripts", "build-package.mjs"));
    const r = spawnSync("node", [join(dir, "scripts", "build-package.mjs")], { cwd: dir, encoding: "utf8" });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /^build: TypeScript is not installed \(node_modules\/typescript is missing\), so dist\/ cannot be built\.\nRun `npm ci` first, then `npm pack`/);
    assert.doesNotMatch(r.stderr, /^\s+at /m, "a stack trace");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("npm pack's tarball in the repo root is ignored by git", () => {
  const { name, version } = JSON.parse(read("package.json")) as { name: string; version: string };
  const r = spawnSync("git", ["check-ignore", "--no-index", "-q", `${name}-${version}.tgz`], { cwd: ROOT });
  assert.equal(r.status, 0, `${name}-${version}.tgz is not ignored (.gitignore)`);
});

test("the sandbox entry's JSDoc imports the npm package's names", () => {
  const doc = read("src/sandbox/mod.ts");
  assert.match(doc, /from "appwatch\/sandbox"/);
  assert.match(doc, /from "appwatch";/);
  assert.doesNotMatch(doc, /from "@appwatch\/appwatch(\/sandbox)?"/);
});

test("`npx wrangler deploy` has its wrangler.toml: the repo's file is docs/edge-cloudflare.md's, and names the bundle, the binding and the class the Worker uses", () => {
  assert.ok(existsSync(join(ROOT, "wrangler.toml")), "wrangler.toml is missing from the repo root");
  const file = read("wrangler.toml");
  const doc = read("docs/edge-cloudflare.md");
  const block = /```toml\n# wrangler\.toml\n([\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(block, "docs/edge-cloudflare.md shows the wrangler.toml");
  assert.equal(file.replace(/^(#[^\n]*\n)+/, ""), block, "wrangler.toml (after its header comment) is the page's block");
  const value = (key: string) => new RegExp(`^${key} = "([^"]*)"`, "m").exec(file)?.[1];
  // What scripts/build-worker.mjs writes, and what tests/worker-cloudflare.test.ts runs in miniflare.
  assert.equal(value("main"), "dist/cloudflare/worker.js");
  assert.match(read("scripts/build-worker.mjs"), /DEFAULT_OUTFILE = join\(ROOT, "dist\/cloudflare\/worker\.js"\)/);
  assert.match(file, /^no_bundle = true$/m, "what is deployed is the tested bundle");
  assert.equal(value("name"), "appwatch");
  assert.match(file, /\[\[durable_objects\.bindings\]\]\nname = "APPWATCH"\s[^\n]*\nclass_name = "AppwatchObject"\n/);
  assert.match(read("src/worker/cloudflare.ts"), /APPWATCH: DurableObjectNamespaceLike/);
  assert.match(read("src/worker/cloudflare.ts"), /export class AppwatchObject\b/);
  assert.match(file, /new_sqlite_classes = \["AppwatchObject"\]/);
  assert.equal(value("compatibility_date"), /compatibilityDate: "([^"]+)"/.exec(read("tests/worker-cloudflare.test.ts"))?.[1], "the date the tests run with");
});
