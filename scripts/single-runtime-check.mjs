#!/usr/bin/env node
// Single-runtime proofs (CI runs this from .ci/run after npm ci; about a minute):
//   deno-import  a temp folder OUTSIDE the repo with only main.ts, which imports the repo's mod.ts
//                and src/sandbox/mod.ts by absolute path and by file URL, runs with only Deno on
//                PATH and a fresh Deno cache (`deno run -A --import-map <repo>/deno.json main.ts`):
//                it starts the sandbox, watches it with createWatcher and sees the demo apps.
//   deno         a `git clone` of this repo (no node_modules), PATH = a folder with only the Deno
//                binary, a fresh Deno cache: `deno task start events --sandbox` prints an app
//                event; SIGTERM to the `deno task` process → exit 0, "stopped" logged.
//   bun          the same with only Bun: `bun run start events --sandbox`.
// The binaries come from node_modules (npm ci); nothing else of node_modules is used.
// Prints "single-runtime-check: ok" or every failure and exits 1.
//
//   node scripts/single-runtime-check.mjs [deno-import] [deno] [bun]   # default: all three
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const BINARIES = {
  deno: join(ROOT, "node_modules", "deno", "deno"),
  bun: join(ROOT, "node_modules", "bun", "bin", "bun.exe"),
};
const STEPS = ["deno-import", "deno", "bun"];
const wanted = process.argv.slice(2);
const steps = wanted.length ? wanted : STEPS;
for (const s of steps) {
  if (!STEPS.includes(s)) {
    console.error(`single-runtime-check: unknown step "${s}" (${STEPS.join(", ")})`);
    process.exit(2);
  }
}

const failures = [];
const scratch = mkdtempSync(join(tmpdir(), "appwatch-single-runtime-"));
const tail = (lines, n = 25) => lines.slice(-n).map((l) => `    ${l}`).join("\n");

/** A folder holding only a symlink named `name` to the real runtime binary (not to a shim). */
function onlyRuntimePath(name) {
  const real = realpathSync(BINARIES[name]);
  const bin = join(scratch, `${name}-bin`);
  mkdirSync(bin, { recursive: true });
  if (!existsSync(join(bin, name))) symlinkSync(real, join(bin, name)); // one folder per runtime, shared by its steps
  return bin;
}

/** The environment of a machine with one runtime: PATH is that runtime only, fresh caches and
 * HOME, no cluster config, nothing from an outer npm. The CA variables stay (registry access). */
function runtimeEnv(name) {
  const env = { ...process.env, NO_COLOR: "1", PATH: onlyRuntimePath(name), HOME: join(scratch, `${name}-home`) };
  delete env.KUBECONFIG; // no cluster config at all (a KUBECONFIG naming missing files is an error, as in kubectl)
  for (const k of Object.keys(env)) if (k.startsWith("npm_") || k === "NODE_OPTIONS") delete env[k];
  delete env.KUBERNETES_SERVICE_HOST;
  env.DENO_DIR = join(scratch, `${name}-deno-cache`);
  env.BUN_INSTALL_CACHE_DIR = join(scratch, `${name}-bun-cache`);
  mkdirSync(env.HOME, { recursive: true });
  return env;
}

/** Runs until `done(lines)` holds, then SIGTERMs the process (only it) and waits for its exit. */
function runUntil(what, cmd, args, { cwd, env, done, timeoutMs = 180_000 }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    const lines = [];
    let signalled = false;
    const onData = (d) => {
      lines.push(...d.split("\n").filter(Boolean));
      if (!signalled && done(lines)) {
        signalled = true;
        child.kill("SIGTERM");
      }
    };
    child.stdout.setEncoding("utf8").on("data", onData);
    child.stderr.setEncoding("utf8").on("data", onData);
    // A deadline for a broken run, not a timing rule.
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (err) => lines.push(`spawn error: ${err.message}`));
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ what, code, signal, signalled, lines, seconds: ((Date.now() - started) / 1000).toFixed(1) });
    });
  });
}

function expectStop(r, extra) {
  const where = r.what;
  if (!r.signalled) {
    failures.push(`${where}: never showed what it should (exit ${r.code ?? r.signal}):\n${tail(r.lines)}`);
    return false;
  }
  if (r.code !== 0) {
    failures.push(`${where}: exit ${r.code ?? r.signal} after SIGTERM, expected 0:\n${tail(r.lines)}`);
    return false;
  }
  if (extra && !r.lines.some((l) => extra.test(l))) {
    failures.push(`${where}: no ${extra} line after SIGTERM:\n${tail(r.lines)}`);
    return false;
  }
  return true;
}

function cleanClone() {
  const dir = join(scratch, `clone-${Math.random().toString(36).slice(2, 8)}`);
  const r = spawnSync("git", ["clone", "--quiet", "--no-hardlinks", ROOT, dir], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git clone failed: ${r.stderr}`);
  if (existsSync(join(dir, "node_modules"))) throw new Error("the clone has node_modules");
  return dir;
}

const APP_EVENT = /"type":"added"/;
const STOPPED = /"msg":"(stopped|watch stopped)"|"stopped"/;

async function denoImportStep() {
  const env = runtimeEnv("deno");
  const dir = join(scratch, "outside");
  mkdirSync(dir);
  const byPath = join(ROOT, "mod.ts");
  const byUrl = pathToFileURL(join(ROOT, "src", "sandbox", "mod.ts")).href;
  writeFileSync(
    join(dir, "main.ts"),
    `import { createWatcher, KNATIVE_SERVICES } from ${JSON.stringify(byPath)};
import { startSandboxCluster } from ${JSON.stringify(byUrl)};
const cluster = await startSandboxCluster({ demoIntervalMs: 0 });
const watcher = createWatcher({ client: cluster.client, resource: KNATIVE_SERVICES, namespaces: ["flyte"] });
const stop = new AbortController();
let added = 0;
for await (const e of watcher.run(stop.signal)) {
  if (e.type === "added") added++;
  if (e.type === "synced") break;
}
stop.abort();
await cluster.close();
console.log(JSON.stringify({ imported: "ok", added }));
`,
  );
  for (const [what, args] of [
    ["deno-import (--import-map)", ["run", "-A", "--import-map", join(ROOT, "deno.json"), "main.ts"]],
  ]) {
    const r = spawnSync("deno", args, { cwd: dir, env, encoding: "utf8", timeout: 180_000 });
    const out = `${r.stdout}\n${r.stderr}`.split("\n").filter(Boolean);
    const line = out.find((l) => l.startsWith('{"imported":"ok"'));
    if (r.status !== 0 || !line || JSON.parse(line).added < 1) {
      failures.push(`${what}: exit ${r.status ?? r.error?.message}, expected an {"imported":"ok","added">0} line:\n${tail(out)}`);
      continue;
    }
    console.log(`single-runtime-check: ${what} ok: ${line} (only deno on PATH, a folder outside the repo with only main.ts)`);
  }
}

async function runtimeStartStep(name) {
  const env = runtimeEnv(name);
  const dir = cleanClone();
  const args = name === "deno" ? ["task", "start", "events", "--sandbox"] : ["run", "start", "events", "--sandbox"];
  const r = await runUntil(`${name} ${args.join(" ")}`, name, args, { cwd: dir, env, done: (lines) => lines.some((l) => APP_EVENT.test(l)) });
  if (expectStop(r)) {
    console.log(`single-runtime-check: \`${name} ${args.join(" ")}\` ok in a clean clone with only ${name} on PATH (${r.seconds}s incl. the first download); first event:`);
    console.log(`  ${r.lines.find((l) => APP_EVENT.test(l))}`);
  }
  // The service (not only the events command) starts too: wait for its listening line.
  const s = await runUntil(`${name} ${name === "deno" ? "task" : "run"} start --sandbox`, name, name === "deno" ? ["task", "start", "--sandbox"] : ["run", "start", "--sandbox"], {
    cwd: dir,
    env: { ...env, APPWATCH_PORT: "0", APPWATCH_HOST: "127.0.0.1" },
    done: (lines) => lines.some((l) => l.includes('"appwatch listening"')),
  });
  if (expectStop(s, STOPPED)) console.log(`single-runtime-check: \`${s.what}\` ok (listened, stopped on SIGTERM, exit 0)`);
  // The sandbox API server alone (`deno task sandbox` / `bun run sandbox`).
  const sandboxArgs = name === "deno" ? ["task", "sandbox", "--port", "0"] : ["run", "sandbox", "--port", "0"];
  const sb = await runUntil(`${name} ${sandboxArgs.join(" ")}`, name, sandboxArgs, { cwd: dir, env, done: (lines) => lines.some((l) => l.includes('"sandbox listening"')) });
  if (expectStop(sb, /"sandbox stopped"/)) console.log(`single-runtime-check: \`${sb.what}\` ok (listened, stopped on SIGTERM, exit 0)`);
}

const started = Date.now();
try {
  for (const name of ["deno", "bun"]) {
    if (!existsSync(BINARIES[name])) failures.push(`${name}: ${BINARIES[name]} is missing; run npm ci`);
  }
  if (!failures.length) {
    if (steps.includes("deno-import")) await denoImportStep();
    if (steps.includes("deno")) await runtimeStartStep("deno");
    if (steps.includes("bun")) await runtimeStartStep("bun");
  }
} catch (err) {
  failures.push(String(err?.stack ?? err));
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

if (failures.length) {
  console.error(`single-runtime-check: FAILED (${failures.length})`);
  for (const f of failures) console.error(`  - ${f}`);
  process.exit(1);
}
console.log(`single-runtime-check: ok (${((Date.now() - started) / 1000).toFixed(1)}s)`);
