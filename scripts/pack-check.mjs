#!/usr/bin/env node
// The npm package, proved from outside the repo (`node scripts/pack-check.mjs`, in `npm test`'s
// release step):
//   build     `npm run build` (scripts/build-package.mjs: tsc -p tsconfig.build.json → dist/); the
//             .d.ts name .js files, like the JS;
//   pack      `npm pack` into a temp dir; prints the tarball's size and file count; checks that
//             it holds every export and the bin, and no tests, bench, scripts, fixtures or .ts sources;
//   install   a scratch project in os.tmpdir() (outside the repo) installs the tarball
//             (`npm install --prefer-offline`): no tsx comes with it, and npm warns no EBADENGINE;
//   node      plain `node` (no tsx, no loader) imports every export path of package.json;
//   tsc       a consumer imports every export path and uses the main ones, type-checked by plain
//             `tsc` (strict, module nodenext, no allowImportingTsExtensions, no skipLibCheck);
//   bun       Bun imports every export path;
//   cli       `npx appwatch --help`; `appwatch events --sandbox` until its first app event, then
//             SIGINT → exit 0; `appwatch serve --sandbox --port 0` on Node and on Bun answers
//             /readyz and /v1/apps with the demo apps, then SIGINT → exit 0;
//   publint   `publint run <tarball>` (suggestions count as failures too);
//   attw      `attw <tarball> --profile esm-only` (the package is ESM only, like its sources).
// Prints "pack-check: <step> ok" per step and "pack-check: ok", or each failure and exits 1.
// APPWATCH_PACK_KEEP=1 keeps the temp dirs (printed) to look into.
//
//   node scripts/pack-check.mjs
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const PKG = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");
const KEEP = process.env.APPWATCH_PACK_KEEP === "1";

// The worker entries (issue 15, Deliver 4) are written on other branches. Once src/worker/<name>.ts
// exists, package.json must export it as "./worker/<name>" (types + default, like "./sandbox");
// every step below then checks it like the other exports.
const WORKER_ENTRIES = ["deno", "bun", "cloudflare"];
// Export paths a runtime cannot import by design (e.g. an entry that imports `cloudflare:workers`);
// each needs a reason here. Every other export path is imported on Node and on Bun.
// The worker entries start the service when loaded (they are programs, not libraries): the check runs them instead (see workerStep).
const ENTRY = "an entry: loading it starts the service";
const NOT_IMPORTABLE = {
  node: { "./worker/deno": ENTRY, "./worker/bun": ENTRY },
  bun: { "./worker/deno": ENTRY, "./worker/bun": ENTRY },
};

/** A failed check: its message is printed as is. */
class CheckFailed extends Error {}
const fail = (message) => {
  throw new CheckFailed(message);
};
const tail = (text, lines = 30) => (text ?? "").trim().split("\n").slice(-lines).map((l) => `    ${l}`).join("\n");

// The scratch project must see nothing of the repo: no node_modules/.bin on PATH (so no tsx, no
// repo-local appwatch), no npm variables of an `npm test` run that point npm back at the repo.
function scratchEnv() {
  const env = { ...process.env, NO_COLOR: "1" };
  for (const k of Object.keys(env)) {
    if (/^npm_(config_local_prefix|package_|lifecycle_)/.test(k) || k === "INIT_CWD") delete env[k];
  }
  const bins = new Set([join(ROOT, "node_modules", ".bin")]);
  env.PATH = (env.PATH ?? "").split(delimiter).filter((p) => !bins.has(p) && !p.startsWith(join(ROOT, "node_modules"))).join(delimiter);
  delete env.NODE_OPTIONS; // no --import tsx from the caller
  return env;
}

function run(cmd, args, { cwd = ROOT, env = process.env, timeoutMs = 180_000 } = {}) {
  const r = spawnSync(cmd, args, { cwd, env: { ...env, NO_COLOR: "1" }, encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  const out = `${r.stdout ?? ""}${r.stderr ? `\n${r.stderr}` : ""}`;
  if (r.error) fail(`${cmd} ${args.join(" ")}: ${r.error.message}\n${tail(out)}`);
  if (r.status !== 0) fail(`${cmd} ${args.join(" ")} exited ${r.status ?? r.signal}\n${tail(out)}`);
  return { stdout: r.stdout ?? "", out };
}

/** The export paths of package.json ("." and subpaths), without "./package.json". */
function exportPaths() {
  const exp = PKG.exports;
  if (!exp || typeof exp !== "object") fail(`package.json has no "exports" map`);
  return Object.keys(exp).filter((k) => k !== "./package.json");
}
const specifier = (path) => (path === "." ? PKG.name : `${PKG.name}/${path.slice(2)}`);

// ------------------------------------------------------------------------------------------ steps

function buildStep() {
  for (const name of WORKER_ENTRIES) {
    if (existsSync(join(ROOT, "src", "worker", `${name}.ts`)) && !PKG.exports?.[`./worker/${name}`]) {
      fail(`src/worker/${name}.ts exists but package.json "exports" has no "./worker/${name}" (add { "types": "./dist/src/worker/${name}.d.ts", "default": "./dist/src/worker/${name}.js" })`);
    }
  }
  for (const path of exportPaths()) {
    const target = PKG.exports[path];
    if (typeof target !== "object" || typeof target.types !== "string" || typeof target.default !== "string") {
      fail(`exports["${path}"] must be { "types": …, "default": … } (types first), got ${JSON.stringify(target)}`);
    }
  }
  run("npm", ["run", "--silent", "build"]);
  const missing = exportPaths().flatMap((p) => [PKG.exports[p].types, PKG.exports[p].default]).concat(Object.values(PKG.bin ?? {}))
    .filter((f) => !existsSync(join(ROOT, f)));
  if (missing.length) fail(`the build did not produce ${missing.join(", ")}`);
  // Declarations must name `.js` files (scripts/build-package.mjs): a `.ts` specifier is `any` to
  // TypeScript before 5.0 and unresolvable to other .d.ts readers.
  const tsSpecifiers = readdirSync(join(ROOT, "dist"), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".d.ts"))
    .flatMap((e) => {
      const file = join(e.parentPath, e.name);
      return readFileSync(file, "utf8").split("\n").map((line, i) => ({ line, at: `${file.slice(ROOT.length + 1)}:${i + 1}` }));
    })
    .filter(({ line }) => !/^\s*(\*|\/\/|\/\*)/.test(line) && /["']\.{1,2}\/[^"']*\.ts["']/.test(line));
  if (tsSpecifiers.length) fail(`.d.ts files import .ts paths:\n${tail(tsSpecifiers.map((t) => `${t.at}: ${t.line.trim()}`).join("\n"))}`);
  return "dist/ (JS + .d.ts, .js specifiers)";
}

function packStep(ctx) {
  ctx.packDir = mkdtempSync(join(tmpdir(), "appwatch-pack-"));
  // --ignore-scripts: the build step above already ran (prepack would run it a second time).
  const { stdout } = run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", ctx.packDir]);
  let info;
  try {
    info = JSON.parse(stdout)[0];
  } catch {
    fail(`npm pack --json printed no JSON:\n${tail(stdout)}`);
  }
  ctx.tarball = join(ctx.packDir, info.filename);
  if (!existsSync(ctx.tarball)) fail(`npm pack reported ${info.filename}, which is not in ${ctx.packDir}`);
  const files = info.files.map((f) => f.path);
  const bad = files.filter((f) => /^(tests|bench|scripts|examples|deploy|docs|src)\/|fixtures?\/|\.test\.|\.tsbuildinfo$|(?<!\.d)\.ts$/.test(f));
  if (bad.length) fail(`the tarball holds files users do not need:\n${tail(bad.join("\n"))}`);
  const wanted = exportPaths().flatMap((p) => [PKG.exports[p].types, PKG.exports[p].default]).concat(Object.values(PKG.bin ?? {}), ["package.json", "README.md"]);
  const absent = wanted.map((f) => f.replace(/^\.\//, "")).filter((f) => !files.includes(f));
  if (absent.length) fail(`the tarball lacks ${absent.join(", ")}`);
  for (const bin of Object.values(PKG.bin ?? {})) {
    if (!readFileSync(join(ROOT, bin), "utf8").startsWith("#!/usr/bin/env node\n")) fail(`${bin} (bin) does not start with "#!/usr/bin/env node"`);
  }
  const kb = (n) => `${(n / 1024).toFixed(1)} kB`;
  return `${info.filename}: ${kb(info.size)} packed, ${kb(info.unpackedSize)} unpacked, ${info.entryCount} files`;
}

function installStep(ctx) {
  ctx.scratch = mkdtempSync(join(tmpdir(), "appwatch-consumer-"));
  writeFileSync(join(ctx.scratch, "package.json"), JSON.stringify({ name: "appwatch-consumer", private: true, type: "module" }, null, 2));
  const { out } = run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", ctx.tarball], { cwd: ctx.scratch, env: scratchEnv() });
  // Every Node line we claim (engines.node) installs the package without npm's engine warning for
  // what it brings (README, "Node lines").
  const badEngine = out.split("\n").filter((l) => /EBADENGINE/.test(l));
  if (badEngine.length) fail(`installing the tarball on Node ${process.version} warns EBADENGINE (a runtime dependency excludes this Node):\n${tail(badEngine.join("\n"))}`);
  const installed = join(ctx.scratch, "node_modules", PKG.name, "package.json");
  if (!existsSync(installed)) fail(`${PKG.name} is not in ${ctx.scratch}/node_modules after npm install`);
  for (const devOnly of ["tsx", "typescript", "esbuild"]) {
    if (existsSync(join(ctx.scratch, "node_modules", devOnly))) fail(`installing the package brought ${devOnly} (a runtime dependency?)`);
  }
  return `${ctx.scratch} (no tsx, typescript or esbuild installed)`;
}

// One program that imports every export path and prints how many names each has.
function importProgram(skip) {
  const paths = exportPaths().filter((p) => !(p in skip)).map(specifier);
  return `for (const p of ${JSON.stringify(paths)}) {
  const m = await import(p);
  const n = Object.keys(m).length;
  if (n === 0) { console.error(p + " has no exports"); process.exit(1); }
  console.log(p + ": " + n + " exports");
}`;
}

function nodeStep(ctx) {
  const major = Number(process.versions.node.split(".")[0]);
  const floor = Number(/(\d+)/.exec(PKG.engines?.node ?? "")?.[1] ?? 0);
  if (major < floor) fail(`Node ${process.version} is below the package's engines (${PKG.engines.node})`);
  const { stdout } = run(process.execPath, ["--input-type=module", "-e", importProgram(NOT_IMPORTABLE.node)], { cwd: ctx.scratch, env: scratchEnv() });
  return `node ${process.version}, no tsx: ${stdout.trim().split("\n").join("; ")}`;
}

function tscStep(ctx) {
  const dir = join(ctx.scratch, "tsc");
  mkdirSync(dir, { recursive: true });
  // No @types/node and no skipLibCheck: the package's .d.ts must stand on their own. `dom` is in
  // lib because hono's and Connect's types use the Fetch API's (Headers, MessageEvent, …).
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
    compilerOptions: {
      strict: true,
      module: "nodenext",
      moduleResolution: "nodenext",
      target: "es2022",
      lib: ["es2023", "dom", "dom.iterable"],
      types: [],
      noEmit: true,
      skipLibCheck: false,
    },
    include: ["consumer.ts"],
  }, null, 2));
  const star = exportPaths().map((p, i) => `import * as entry${i} from ${JSON.stringify(specifier(p))};\nvoid entry${i};`).join("\n");
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "appwatch-tsc-consumer", private: true, type: "module" }));
  writeFileSync(join(dir, "consumer.ts"), `${star}
import { type App, AppK8sClient, createApp, createWatcher, KNATIVE_SERVICES, KubeClient, type ReflectorEvent } from ${JSON.stringify(PKG.name)};
import { startSandboxCluster } from ${JSON.stringify(`${PKG.name}/sandbox`)};

export async function firstApps(signal: AbortSignal): Promise<App[]> {
  const sandbox = await startSandboxCluster({ port: 0 });
  const client = new KubeClient({ server: sandbox.url, namespace: "flyte" });
  const apps = new AppK8sClient({ client, namespace: "flyte" });
  await apps.startWatching(signal);
  const { app } = createApp({ client: apps });
  const response: Response = await app.fetch(new Request("http://x/v1/apps"));
  void response;
  const watcher = createWatcher({ client, resource: KNATIVE_SERVICES, namespaces: ["flyte"] });
  for await (const event of watcher.run(signal)) {
    const e: ReflectorEvent = event;
    if (e.type === "synced") break;
  }
  // @ts-expect-error the types are real, not any: a ReflectorEvent is not a number
  const n: number = (null as unknown as ReflectorEvent);
  void n;
  return [];
}
`);
  // The repo's TypeScript, run in the scratch folder: it resolves "appwatch" from there.
  run(process.execPath, [TSC, "-p", join(dir, "tsconfig.json")], { cwd: dir, env: scratchEnv() });
  const version = JSON.parse(readFileSync(join(ROOT, "node_modules", "typescript", "package.json"), "utf8")).version;
  return `tsc ${version} (strict, nodenext, no skipLibCheck, no @types/node): ${exportPaths().length} export paths, no errors`;
}

function bunPath() {
  try {
    return require.resolve("bun/bin/bun.exe");
  } catch {
    fail("Bun is not in node_modules (bun/bin/bun.exe); run npm ci");
  }
}

function bunStep(ctx) {
  const bun = bunPath();
  const { stdout } = run(bun, ["-e", importProgram(NOT_IMPORTABLE.bun)], { cwd: ctx.scratch, env: scratchEnv() });
  const version = run(bun, ["--version"]).stdout.trim();
  return `bun ${version}: ${stdout.trim().split("\n").join("; ")}`;
}

/**
 * Runs `cmd` in the scratch project until a stdout or stderr line passes `until` (which may
 * return a promise: a check made then), then SIGINT; expects exit 0. A hang guard, not a timing
 * rule: `guardMs` is far above any run's time.
 */
function runUntil(ctx, what, cmd, args, until, guardMs = 120_000, extraEnv = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ctx.scratch, env: { ...scratchEnv(), ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
    const seen = [];
    let matched;
    let signalled = false;
    const guard = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new CheckFailed(`${what}: no matching line in ${guardMs / 1000}s\n${tail(seen.join("\n"))}`));
    }, guardMs);
    const onLine = (line) => {
      seen.push(line);
      if (matched !== undefined) return;
      const r = until(line);
      if (!r) return;
      matched = Promise.resolve(r).then(
        (value) => ({ value }),
        (error) => ({ error }),
      ).then((outcome) => {
        matched = outcome;
        signalled = true;
        child.kill("SIGINT");
      });
    };
    createInterface({ input: child.stdout }).on("line", onLine);
    createInterface({ input: child.stderr }).on("line", onLine);
    child.on("error", (err) => {
      clearTimeout(guard);
      reject(new CheckFailed(`${what}: ${err.message}`));
    });
    child.on("close", (code, signal) => {
      clearTimeout(guard);
      if (!signalled) return reject(new CheckFailed(`${what}: exited ${code ?? signal} before the expected line\n${tail(seen.join("\n"))}`));
      if (matched?.error) return reject(matched.error instanceof CheckFailed ? matched.error : new CheckFailed(`${what}: ${matched.error}`));
      if (code !== 0) return reject(new CheckFailed(`${what}: exited ${code ?? signal} after SIGINT (expected 0)\n${tail(seen.join("\n"))}`));
      resolve(matched.value);
    });
  });
}

const jsonLine = (line) => {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
};

// The served API, asked once the service says it is listening.
async function askService(url) {
  // Asked after the service logged its initial sync, so /readyz must be 200 already.
  const ready = await fetch(`${url}/readyz`);
  if (ready.status !== 200) throw new CheckFailed(`GET ${url}/readyz answered ${ready.status}: ${await ready.text()}`);
  const res = await fetch(`${url}/v1/apps`);
  const body = await res.json();
  if (res.status !== 200 || !Array.isArray(body.apps) || body.apps.length === 0) {
    throw new CheckFailed(`GET ${url}/v1/apps answered ${res.status} with ${JSON.stringify(body).slice(0, 300)}`);
  }
  return body.apps.length;
}

// `serve` logs "appwatch listening" (with the URL) and then "… ready" after the initial sync.
function serveUntil() {
  let url;
  return (line) => {
    const j = jsonLine(line);
    if (j?.msg === "appwatch listening" && typeof j.url === "string") url = j.url;
    if (url && typeof j?.msg === "string" && /\bready\b/.test(j.msg) && j.msg !== "appwatch listening") return askService(url);
    return undefined;
  };
}

async function cliStep(ctx) {
  const help = run("npx", ["--no-install", "appwatch", "--help"], { cwd: ctx.scratch, env: scratchEnv(), timeoutMs: 60_000 }).stdout;
  if (!/^Usage: appwatch/m.test(help)) fail(`npx appwatch --help printed no "Usage: appwatch" line:\n${tail(help)}`);
  // The installed bin itself (what npx runs): npm exec does not pass SIGINT on to its child.
  const bin = join(ctx.scratch, "node_modules", ".bin", "appwatch");
  const event = await runUntil(ctx, "appwatch events --sandbox", bin, ["events", "--sandbox"], (line) => {
    const j = jsonLine(line);
    return j?.type === "added" && typeof j.name === "string" ? j.name : undefined;
  });
  const onNode = await runUntil(ctx, "appwatch serve --sandbox (Node)", bin, ["serve", "--sandbox", "--port", "0", "--host", "127.0.0.1"], serveUntil());
  const entry = join(ctx.scratch, "node_modules", PKG.name, PKG.bin.appwatch);
  const onBun = await runUntil(ctx, "appwatch serve --sandbox (Bun)", bunPath(), [entry, "serve", "--sandbox", "--port", "0", "--host", "127.0.0.1"], serveUntil());
  return `--help ok; events --sandbox: first event "added ${event}", exit 0 on SIGINT; serve --sandbox: /v1/apps ${onNode} apps on Node, ${onBun} on Bun, exit 0 on SIGINT`;
}

function denoPath() {
  const bin = join(ROOT, "node_modules", "deno", "deno");
  if (!existsSync(bin)) fail("Deno is not in node_modules (deno/deno); run npm ci");
  return bin;
}

// A worker entry logs "appwatch listening" with the URL (deno serve), or Bun prints
// "Started server: <url>"; then "… ready" after the initial sync.
function workerUntil() {
  const ask = serveUntil();
  let url;
  return (line) => {
    const started = /^Started server: (http:\/\/\S+?)\/?$/.exec(line);
    if (started) url = started[1];
    const j = jsonLine(line);
    if (url && typeof j?.msg === "string" && /\bready\b/.test(j.msg)) return askService(url);
    return ask(line);
  };
}

// The worker entries as installed: `deno serve` on ./worker/deno and Bun on ./worker/bun, each in
// sandbox mode (APPWATCH_SANDBOX=true), until /v1/apps answers; SIGINT; exit 0.
async function workerStep(ctx) {
  const dist = join(ctx.scratch, "node_modules", PKG.name);
  const file = (path) => join(dist, PKG.exports[path].default);
  const env = { APPWATCH_SANDBOX: "true" };
  const deno = await runUntil(ctx, "deno serve ./worker/deno", denoPath(), ["serve", "-A", "--port", "0", "--host", "127.0.0.1", file("./worker/deno")], workerUntil(), undefined, env);
  const bun = await runUntil(ctx, "bun ./worker/bun", bunPath(), [file("./worker/bun")], workerUntil(), undefined, { ...env, APPWATCH_PORT: "0", APPWATCH_HOST: "127.0.0.1" });
  return `deno serve ./worker/deno: /v1/apps ${deno} apps; bun ./worker/bun: ${bun} apps; both exit 0 on SIGINT`;
}

// A devDependency's bin, run by this Node (its package "exports" may not expose the file).
function binOf(pkg, name) {
  const file = join(ROOT, "node_modules", pkg, "package.json");
  if (!existsSync(file)) fail(`${pkg} is not in node_modules; run npm ci`);
  const { bin } = JSON.parse(readFileSync(file, "utf8"));
  return join(ROOT, "node_modules", pkg, typeof bin === "string" ? bin : bin[name]);
}

function publintStep(ctx) {
  const { out } = run(process.execPath, [binOf("publint", "publint"), "run", ctx.tarball, "--level", "suggestion", "--strict"], { timeoutMs: 120_000 });
  // publint exits 0 with suggestions; any message at all is a failure here.
  const lines = out.trim().split("\n").filter((l) => !/^(Running publint|Unpacking tarball|Linting)/.test(l));
  if (!lines.some((l) => /All good!/.test(l))) fail(`publint reported:\n${tail(lines.join("\n"))}`);
  return lines.join(" ").trim();
}

function attwStep(ctx) {
  // esm-only: the package has no CommonJS build (Node ≥ 20's require(esm) is not relied on), so
  // the node10 and node16-from-CJS resolutions are not checked; every other rule is.
  const { out } = run(process.execPath, [binOf("@arethetypeswrong/cli", "attw"), ctx.tarball, "--profile", "esm-only", "--format", "table-flipped", "--no-emoji", "--no-color"], { timeoutMs: 120_000 });
  console.log(tail(out, 40));
  return "no problems (profile esm-only)";
}

// ------------------------------------------------------------------------------------------- main

const steps = [
  ["build", buildStep, []],
  ["pack", packStep, ["build"]],
  ["install", installStep, ["pack"]],
  ["node", nodeStep, ["install"]],
  ["tsc", tscStep, ["install"]],
  ["bun", bunStep, ["install"]],
  ["cli", cliStep, ["install"]],
  ["worker", workerStep, ["install"]],
  ["publint", publintStep, ["pack"]],
  ["attw", attwStep, ["pack"]],
];
const ctx = {};
const passed = new Set();
const failures = [];
for (const [name, fn, needs] of steps) {
  const missing = needs.filter((n) => !passed.has(n));
  if (missing.length) {
    failures.push(`${name}: not run (${missing.join(", ")} failed)`);
    continue;
  }
  const started = Date.now();
  try {
    const what = await fn(ctx);
    passed.add(name);
    console.log(`pack-check: ${name} ok (${((Date.now() - started) / 1000).toFixed(1)}s)${what ? `: ${what}` : ""}`);
  } catch (err) {
    const message = err instanceof CheckFailed ? err.message : err?.stack ?? String(err);
    failures.push(`${name}: ${message}`);
    console.log(`pack-check: ${name} FAILED\n${message}`);
  }
}
for (const dir of [ctx.packDir, ctx.scratch]) {
  if (!dir) continue;
  if (KEEP || failures.length) console.log(`pack-check: kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
if (failures.length) {
  console.error(`\npack-check: ${failures.length} failed\n${failures.map((f) => `  - ${f.split("\n")[0]}`).join("\n")}`);
  process.exit(1);
}
console.log("pack-check: ok");
