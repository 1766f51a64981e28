/**
 * The Node lines we claim (issue 24, item 5): package.json's `engines.node` is the floor, and every
 * installed package's own `engines.node` must admit it, so that `npm install appwatch` on the lowest
 * Node we claim prints no EBADENGINE for what it brings, and `npm ci` here prints none either
 * except for the dev-only packages listed below, each with its reason. The README's requirement
 * line names the same floor and the lines CI runs (.ci/run's NODE_LINES).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const readJson = (p: string) => JSON.parse(readFileSync(p, "utf8"));

type Manifest = {
  name: string;
  version: string;
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};
type Version = [number, number, number];

// ------------------------------------------------------------------------ a minimal range check
// Only the forms that occur in our tree: `*`, `>=X[.Y[.Z]]`, `^X.Y.Z` (X > 0), a bare `X`, `X.x`
// or `X.Y.Z`, and `||` between them. Anything else throws, naming the range, so that a new form
// is noticed (and taught here) instead of passing or failing by accident.

const cmp = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

function parseVersion(text: string): Version {
  const m = /^v?(\d+)\.(\d+)\.(\d+)$/.exec(text.trim());
  if (!m) throw new Error(`not a plain X.Y.Z version: "${text}"`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

function comparatorAdmits(token: string, v: Version, range: string): boolean {
  if (token === "*" || token === "x") return true;
  const m = /^(>=|\^)?v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?$/.exec(token);
  if (!m) throw new Error(`engines range "${range}": the form "${token}" is not understood by tests/engines.test.ts`);
  const [, op, majorText, minorText, patchText] = m;
  const wild = (t: string | undefined) => t === undefined || t === "x" || t === "*";
  const low: Version = [Number(majorText), wild(minorText) ? 0 : Number(minorText), wild(patchText) ? 0 : Number(patchText)];
  if (op === ">=") return cmp(v, low) >= 0;
  if (op === "^") {
    if (low[0] === 0) throw new Error(`engines range "${range}": "${token}" (a ^0.x range) is not understood by tests/engines.test.ts`);
    return cmp(v, low) >= 0 && v[0] === low[0];
  }
  // A bare version: X / X.x is the whole major line, X.Y / X.Y.x the minor, X.Y.Z exactly that.
  if (wild(minorText)) return v[0] === low[0];
  if (wild(patchText)) return v[0] === low[0] && v[1] === low[1];
  return cmp(v, low) === 0;
}

/** Whether the npm `engines` range admits version v (see the forms above). */
function rangeAdmits(range: string, v: Version): boolean {
  return range.split("||").some((part) => {
    const tokens = part.trim().replace(/(>=|\^)\s+/g, "$1").split(/\s+/).filter(Boolean);
    if (tokens.length === 0) return true; // "" is "*"
    return tokens.every((t) => comparatorAdmits(t, v, range));
  });
}

// ------------------------------------------------------------------------------- our claims

const PKG = readJson(join(ROOT, "package.json")) as Manifest;
const OUR_RANGE = PKG.engines?.node ?? "";
/** The lowest Node we claim: package.json's engines.node, which must be `>=X.Y.Z`. */
function floor(): Version {
  const m = /^>=\s*(\d+\.\d+\.\d+)$/.exec(OUR_RANGE);
  assert.ok(m, `package.json engines.node is "${OUR_RANGE}"; this test expects ">=X.Y.Z" (the floor)`);
  return parseVersion(m[1]!);
}
const show = (v: Version) => v.join(".");
/** The other Node lines CI runs the Node tests on: .ci/run's NODE_LINES="22 24 26". */
function ciLines(): number[] {
  const ci = readFileSync(join(ROOT, ".ci", "run"), "utf8");
  const lines = /^NODE_LINES="([\d ]+)"$/m.exec(ci)?.[1]?.trim().split(/\s+/).map(Number);
  assert.ok(lines && lines.length > 0, '.ci/run sets NODE_LINES="…" (the other Node lines the node tests run on)');
  return lines;
}

/**
 * Dev-only packages whose `engines.node` excludes our floor, by package-lock.json path, each with
 * the reason it stays. Each entry must still be needed (its engines still exclude the floor) and
 * dev-only; nothing that `npm install appwatch` brings may be listed.
 */
const DEV_EXCEPTIONS: Record<string, string> = {
  "node_modules/@kubernetes/client-node-2/node_modules/undici":
    "undici 8 (Node >= 22.19), from @kubernetes/client-node 2.x (the B1 benchmark's peer, npm alias client-node-2): every 2.x depends on undici ^8, and the benchmark loads it on Deno and Bun only",
  "node_modules/miniflare":
    "miniflare 4.20260730.0 (Node >= 22), the Cloudflare tests' workerd: the last one admitting Node 20 (4.20260426.0, workerd 1.20260426) kept an aborted SSE stream open under Bun's fetch in 5 of 5 runs, so it tested a workerd Cloudflare no longer runs; this one runs on Node 20 in CI",
};

test("rangeAdmits: the npm engines forms in our tree", () => {
  const v = parseVersion("20.18.1");
  for (const r of [">=20.18.1", ">=20", ">= 14.6", ">=14.17", "^18.17.0 || ^20.3.0 || >=21.0.0", "20 || >=22", "4.x || >=6.0.0", "*", "", "20.x", "20.18.1"]) {
    assert.equal(rangeAdmits(r, v), true, r);
  }
  for (const r of [">=22", ">=22.19.0", ">=20.19.0", "^18.17.0 || >=21.0.0", "18 || >=22", "20.18.2", "20.17.x"]) {
    assert.equal(rangeAdmits(r, v), false, r);
  }
  for (const r of ["~20.1.0", "<22", ">20", "^0.10.0", ">=20.0.0-rc.1", "20 - 22"]) {
    assert.throws(() => rangeAdmits(r, v), /is not understood/, r);
  }
});

test("what `npm install appwatch` brings admits the Node lines we claim: each runtime dependency's installed engines.node", () => {
  const low = floor();
  // The floor itself, and the newest release of each line CI runs (a range may admit 22.19 only).
  const claimed: Version[] = [low, ...ciLines().map((l): Version => [l, 999, 999])];
  const label = (v: Version) => (v === low ? show(v) : `${v[0]} (its newest)`);
  // Node's resolution from a package's folder up to the repo root, like npm's layout is read.
  const locate = (from: string, name: string): string | undefined => {
    for (let dir = from; dir.startsWith(ROOT); dir = dirname(dir)) {
      const candidate = join(dir, "node_modules", name);
      if (existsSync(join(candidate, "package.json"))) return candidate;
      if (dir === ROOT) break;
    }
    return undefined;
  };
  const seen = new Map<string, Manifest>();
  const bad: string[] = [];
  const visit = (dir: string, manifest: Manifest, via: string) => {
    const wanted: [string, boolean][] = [
      ...Object.keys(manifest.dependencies ?? {}).map((n): [string, boolean] => [n, true]),
      ...Object.keys(manifest.optionalDependencies ?? {}).map((n): [string, boolean] => [n, false]),
      ...Object.keys(manifest.peerDependencies ?? {}).map((n): [string, boolean] => [n, !manifest.peerDependenciesMeta?.[n]?.optional]),
    ];
    for (const [name, required] of wanted) {
      const found = locate(dir, name);
      if (!found) {
        if (required) bad.push(`${via} > ${name}: not installed (run npm ci)`);
        continue;
      }
      if (seen.has(found)) continue;
      const dep = readJson(join(found, "package.json")) as Manifest;
      seen.set(found, dep);
      const range = dep.engines?.node;
      for (const v of claimed) {
        if (range !== undefined && !rangeAdmits(range, v)) {
          bad.push(`${via} > ${dep.name}@${dep.version}: engines.node "${range}" excludes Node ${label(v)} (ours: "${OUR_RANGE}")`);
        }
      }
      visit(found, dep, `${via} > ${dep.name}`);
    }
  };
  // Our runtime dependencies only: what the tarball's package.json makes npm install.
  visit(ROOT, { name: PKG.name, version: PKG.version, dependencies: PKG.dependencies }, PKG.name);
  assert.ok(seen.size >= Object.keys(PKG.dependencies ?? {}).length, `only ${seen.size} runtime packages found`);
  assert.deepEqual(bad, []);
});

test("`npm ci` here: every package in package-lock.json admits the lowest Node we claim, but the listed dev-only ones", () => {
  const low = floor();
  const lock = readJson(join(ROOT, "package-lock.json")) as {
    packages: Record<string, { version?: string; dev?: boolean; engines?: { node?: string } | string[] }>;
  };
  assert.equal((lock.packages[""]?.engines as { node?: string } | undefined)?.node, OUR_RANGE, "package-lock.json's root engines.node is package.json's");
  const bad: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === "" || Array.isArray(entry.engines)) continue; // an old array form names no range
    const range = entry.engines?.node;
    const admits = range === undefined || rangeAdmits(range, low);
    const reason = DEV_EXCEPTIONS[path];
    if (reason !== undefined) {
      if (admits) bad.push(`${path}@${entry.version}: listed in DEV_EXCEPTIONS but its engines.node "${range}" admits Node ${show(low)}: drop the entry`);
      if (!entry.dev) bad.push(`${path}@${entry.version}: listed in DEV_EXCEPTIONS but it is not dev-only (the package would bring it)`);
      continue;
    }
    if (!admits) bad.push(`${path}@${entry.version}${entry.dev ? " (dev)" : ""}: engines.node "${range}" excludes Node ${show(low)} (ours: "${OUR_RANGE}"): pick a version that admits it, or list it in DEV_EXCEPTIONS with the reason`);
  }
  for (const path of Object.keys(DEV_EXCEPTIONS)) if (!lock.packages[path]) bad.push(`${path}: listed in DEV_EXCEPTIONS but not in package-lock.json: drop the entry`);
  assert.deepEqual(bad, []);
});

test("the README's requirement line names the floor of package.json and the Node lines .ci/run runs", () => {
  const low = floor();
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const line = readme.split("\n").find((l) => l.startsWith("You need Node"));
  assert.ok(line, 'the README has a "You need Node …" line');
  assert.ok(line.includes(`Node ≥ ${show(low)}`), `the README's line names Node ≥ ${show(low)}: ${line}`);
  const claimed = [low[0], ...ciLines()].sort((a, b) => a - b).map(String);
  const named = [...readme.matchAll(/\bNode (\d+)(?:, (\d+))*(?:,? and (\d+))? \(the lines CI runs\)/g)][0];
  assert.ok(named, 'the README names the lines as "Node A, B and C (the lines CI runs)"');
  const inReadme = named[0].replace(/ \(the lines CI runs\)$/, "").replace(/^Node /, "").split(/, | and /).filter(Boolean);
  assert.deepEqual(inReadme, claimed, "the README's lines are the machine's (the floor's) plus .ci/run's NODE_LINES");
  for (const l of claimed) assert.ok(rangeAdmits(OUR_RANGE, [Number(l), 99, 0]), `package.json engines.node "${OUR_RANGE}" admits Node ${l}`);
});
