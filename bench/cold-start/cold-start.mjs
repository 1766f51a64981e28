#!/usr/bin/env node
/**
 * B8 cold start: `node bench/cold-start/cold-start.mjs [--rounds N] [--no-build] [--no-cloudflare] [--only id,id]`.
 *
 * For every start form of appwatch (and, per runtime, a bare HTTP server with no appwatch code as
 * the limit), the wall time from spawn to the first `GET /readyz` answering 200: the process is
 * spawned, its stdout/stderr are read until it prints its listening line (the URL is parsed from
 * it), then `/readyz` is polled every 20 ms until it answers 200. Then SIGTERM to the spawned
 * (outermost) process, and the exit is awaited: the exit code must be 0, and nothing of its process
 * group may be left behind (a leftover is reported and killed).
 *
 * All appwatch forms run the built-in sandbox (`--sandbox` or `APPWATCH_SANDBOX=true`), `--port 0`
 * (or `APPWATCH_PORT=0`, `deno serve --port 0`), with KUBECONFIG and every APPWATCH_* variable
 * removed from the environment. One unmeasured warm-up round first (module caches, Deno's
 * transpile cache, the page cache: "cold" is the process, not the disk). Then N rounds; within a
 * round every form runs once, one after the other, in an order rotated every round.
 *
 * Setup, once, before the rounds: `npm run build` (the package bin `dist/src/bin.js`; skipped with
 * `--no-build` when dist/ exists) and, for the Cloudflare forms, the Worker bundle
 * (`scripts/build-worker.mjs`, into a temp dir) plus one sandbox API server process that the
 * Worker's Durable Object watches (`src/sandbox/main.ts`). The Cloudflare forms are a Node process
 * that starts miniflare (workerd) with the bundle and prints the URL `mf.ready` gives; the limit
 * is the same with a trivial Worker. On workerd the watch starts on the first request, so the
 * polls themselves start it.
 *
 * Output: a Markdown table on stdout (median and min ms, median ÷ the bare server of the same
 * runtime, stop time, exit codes) and bench/results/cold-start.json.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const RESULTS = join(ROOT, "bench", "results", "cold-start.json");
const DENO = join(ROOT, "node_modules", "deno", "deno");
const BUN = join(ROOT, "node_modules", "bun", "bin", "bun.exe");
const NODE = process.execPath;
const READY_TIMEOUT_MS = 60_000;
const EXIT_TIMEOUT_MS = 20_000;
const POLL_MS = 20;

function option(flag) {
  const i = process.argv.indexOf(flag);
  if (i >= 0) return process.argv[i + 1];
  const eq = process.argv.find((a) => a.startsWith(`${flag}=`));
  return eq?.slice(flag.length + 1);
}
const ROUNDS = Number(option("--rounds") ?? 5);
if (!Number.isInteger(ROUNDS) || ROUNDS <= 0) throw new Error(`--rounds must be a positive integer`);
const BUILD = !process.argv.includes("--no-build");
const CLOUDFLARE = !process.argv.includes("--no-cloudflare");
const ONLY = option("--only")?.split(",").filter(Boolean);

/** The environment every form starts from: no cluster configuration, no appwatch settings. */
function baseEnv(extra = {}) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k === "KUBECONFIG" || k.startsWith("APPWATCH_") || k.startsWith("npm_")) delete env[k];
  return { ...env, ...extra };
}

// ---------------------------------------------------------------- bare servers (the limit per runtime)

const BARE_NODE = `
const http = require("node:http");
const server = http.createServer((req, res) => { res.writeHead(req.url === "/readyz" ? 200 : 404, { "content-type": "text/plain" }); res.end("ok"); });
server.listen(0, "127.0.0.1", () => console.log("listening http://127.0.0.1:" + server.address().port));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
`;
const BARE_DENO = `
const ac = new AbortController();
const server = Deno.serve({ port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen: ({ port }) => console.log("listening http://127.0.0.1:" + port) },
  (req) => new Response("ok", { status: new URL(req.url).pathname === "/readyz" ? 200 : 404 }));
Deno.addSignalListener("SIGTERM", () => { ac.abort(); server.finished.then(() => Deno.exit(0)); });
`;
const BARE_BUN = `
const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => new Response("ok", { status: new URL(req.url).pathname === "/readyz" ? 200 : 404 }) });
console.log("listening " + server.url.href);
process.on("SIGTERM", () => { server.stop(true); process.exit(0); });
`;

// ---------------------------------------------------------------- Cloudflare (miniflare) launcher

/** A Node process that starts miniflare with one Worker module and prints its URL; SIGTERM disposes it. */
const MINIFLARE_LAUNCHER = `
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { Miniflare } from "miniflare";
const [file, kubeUrl] = process.argv.slice(1);
const appwatch = kubeUrl !== "-";
const mf = new Miniflare({
  host: "127.0.0.1", port: 0,
  modulesRoot: dirname(file),
  modules: [{ type: "ESModule", path: file, contents: readFileSync(file, "utf8") }],
  compatibilityDate: "2026-01-01",
  ...(appwatch ? { durableObjects: { APPWATCH: "AppwatchObject" }, bindings: { APPWATCH_KUBE_API_URL: kubeUrl, APPWATCH_LOG_LEVEL: "warn" } } : {}),
});
const url = await mf.ready;
console.log("miniflare listening " + url.href);
// miniflare's own SIGTERM hook exits 143 at once, before workerd is gone: replace it with an awaited dispose.
for (const l of process.listeners("SIGTERM")) process.removeListener("SIGTERM", l);
process.on("SIGTERM", () => { mf.dispose().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); }); });
`;
const TRIVIAL_WORKER = `export default { fetch(req) { return new Response("ok", { status: new URL(req.url).pathname === "/readyz" ? 200 : 404 }); } };\n`;

// ---------------------------------------------------------------- the forms

const URL_IN_LINE = /(https?:\/\/[0-9a-zA-Z.[\]:-]+:\d+)/;
/** The line that says a form listens, and the URL in it. appwatch logs `"msg":"appwatch listening","url":"…"`; Bun's default export prints `Started server: <url>`. */
function listeningUrl(line) {
  if (/"msg":"appwatch listening"/.test(line)) {
    try {
      return JSON.parse(line).url;
    } catch {
      return line.match(URL_IN_LINE)?.[1];
    }
  }
  if (/^Started server: |^listening |^miniflare listening /.test(line)) return line.match(URL_IN_LINE)?.[1];
  return undefined;
}

function forms(tmp, kubeUrl) {
  const sandboxEnv = baseEnv({ APPWATCH_SANDBOX: "true" });
  const list = [
    { id: "npm-start", runtime: "node", shown: "npm start -- --sandbox --port 0", cmd: "npm", args: ["start", "--", "--sandbox", "--port", "0"], env: baseEnv() },
    { id: "launch", runtime: "node", shown: "node scripts/launch.mjs src/main.ts --sandbox --port 0", cmd: NODE, args: ["scripts/launch.mjs", "src/main.ts", "--sandbox", "--port", "0"], env: baseEnv() },
    { id: "node-bin", runtime: "node", shown: "node dist/src/bin.js --sandbox --port 0", cmd: NODE, args: ["dist/src/bin.js", "--sandbox", "--port", "0"], env: baseEnv() },
    { id: "bare-node", runtime: "node", bare: true, shown: "node -e <node:http server>", cmd: NODE, args: ["-e", BARE_NODE], env: baseEnv() },
    { id: "deno-task", runtime: "deno", shown: "npx deno task start --sandbox --port 0", cmd: "npx", args: ["deno", "task", "start", "--sandbox", "--port", "0"], env: baseEnv() },
    { id: "deno-run", runtime: "deno", shown: "node_modules/deno/deno run -A src/main.ts --sandbox --port 0", cmd: DENO, args: ["run", "-A", "src/main.ts", "--sandbox", "--port", "0"], env: baseEnv() },
    { id: "deno-serve", runtime: "deno", shown: "APPWATCH_SANDBOX=true node_modules/deno/deno serve -A --port 0 --host 127.0.0.1 src/worker/deno.ts", cmd: DENO, args: ["serve", "-A", "--port", "0", "--host", "127.0.0.1", "src/worker/deno.ts"], env: sandboxEnv },
    { id: "bare-deno", runtime: "deno", bare: true, shown: "deno eval <Deno.serve>", cmd: DENO, args: ["eval", BARE_DENO], env: baseEnv() },
    { id: "bun-run-start", runtime: "bun", shown: "npx bun run start --sandbox --port 0", cmd: "npx", args: ["bun", "run", "start", "--sandbox", "--port", "0"], env: baseEnv() },
    { id: "bun-main", runtime: "bun", shown: "node_modules/bun/bin/bun.exe src/main.ts --sandbox --port 0", cmd: BUN, args: ["src/main.ts", "--sandbox", "--port", "0"], env: baseEnv() },
    { id: "bun-worker", runtime: "bun", shown: "APPWATCH_SANDBOX=true APPWATCH_PORT=0 APPWATCH_HOST=127.0.0.1 bun src/worker/bun.ts", cmd: BUN, args: ["src/worker/bun.ts"], env: baseEnv({ APPWATCH_SANDBOX: "true", APPWATCH_PORT: "0", APPWATCH_HOST: "127.0.0.1" }) },
    { id: "bare-bun", runtime: "bun", bare: true, shown: "bun -e <Bun.serve>", cmd: BUN, args: ["-e", BARE_BUN], env: baseEnv() },
  ];
  if (tmp && kubeUrl) {
    list.push(
      { id: "cf-worker", runtime: "workerd", shown: "miniflare + dist worker bundle (Durable Object → sandbox API server)", cmd: NODE, args: ["--input-type=module", "-e", MINIFLARE_LAUNCHER, join(tmp, "worker.js"), kubeUrl], env: baseEnv() },
      { id: "bare-workerd", runtime: "workerd", bare: true, shown: "miniflare + a trivial Worker", cmd: NODE, args: ["--input-type=module", "-e", MINIFLARE_LAUNCHER, join(tmp, "trivial.js"), "-"], env: baseEnv() },
    );
  }
  return ONLY ? list.filter((f) => ONLY.includes(f.id)) : list;
}

// ---------------------------------------------------------------- one measurement

function getStatus(url) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 5_000 }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode));
      res.on("error", () => resolve(-1));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve(-1));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Spawn → listening line → first 200 on /readyz → SIGTERM → exit. */
async function measure(form) {
  const out = [];
  const t0 = performance.now();
  const child = spawn(form.cmd, form.args, { cwd: ROOT, env: form.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal, at: performance.now() })));
  let spawnError;
  child.on("error", (e) => (spawnError = e));
  let resolveUrl;
  const urlSeen = new Promise((r) => (resolveUrl = r));
  let listeningAt;
  for (const stream of [child.stdout, child.stderr]) {
    let buf = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        // deno-lint-ignore no-control-regex
        const line = buf.slice(0, nl).replace(/\x1b\[[0-9;]*m/g, "").trimEnd();
        buf = buf.slice(nl + 1);
        out.push(line);
        if (listeningAt === undefined) {
          const url = listeningUrl(line);
          if (url) {
            listeningAt = performance.now();
            resolveUrl(url.replace(/\/$/, ""));
          }
        }
      }
    });
  }
  const result = { ok: false };
  const deadline = t0 + READY_TIMEOUT_MS;
  const url = await Promise.race([urlSeen, exited.then(() => undefined), sleep(READY_TIMEOUT_MS).then(() => undefined)]);
  if (url) {
    result.listeningMs = listeningAt - t0;
    let polls = 0;
    for (;;) {
      polls++;
      const status = await getStatus(`${url}/readyz`);
      if (status === 200) {
        result.readyMs = performance.now() - t0;
        result.polls = polls;
        break;
      }
      if (child.exitCode !== null || child.signalCode !== null || performance.now() > deadline) break;
      await sleep(POLL_MS);
    }
  }
  const sigAt = performance.now();
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  const exit = await Promise.race([exited, sleep(EXIT_TIMEOUT_MS).then(() => undefined)]);
  if (exit) {
    result.exitCode = exit.code;
    result.exitSignal = exit.signal;
    result.stopMs = exit.at - sigAt;
  } else {
    result.exitCode = null;
    result.exitSignal = "timeout";
  }
  // Anything of the process group still alive (a launcher's child left behind)?
  // Clean up: SIGTERM to the whole group (the orphans get their orderly stop), SIGKILL after 10 s.
  await sleep(50);
  if (groupAlive(child.pid)) {
    result.leftover = true;
    const left = spawnSync("ps", ["-o", "pid=,args=", "-g", String(child.pid)], { encoding: "utf8" }).stdout.trim();
    result.leftoverProcesses = left.split("\n").map((l) => l.trim()).filter((l) => l && !l.includes("<defunct>"));
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch { /* gone */ }
    const until = performance.now() + 10_000;
    while (groupAlive(child.pid) && performance.now() < until) await sleep(20);
    result.leftoverStoppedBy = groupAlive(child.pid) ? "SIGKILL" : "SIGTERM to the group";
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch { /* gone */ }
  }
  if (!exit) await exited;
  result.ok = result.readyMs !== undefined && result.exitCode === 0 && !result.leftover;
  if (!result.ok) {
    result.error = spawnError?.message ?? (result.readyMs === undefined ? (url ? "no 200 on /readyz" : "no listening line") : result.leftover ? "left a process behind" : `exit ${result.exitCode ?? result.exitSignal}`);
    result.output = out.slice(-12);
  }
  return result;
}

// ---------------------------------------------------------------- setup

function run(cmd, args, what) {
  const t = performance.now();
  const r = spawnSync(cmd, args, { cwd: ROOT, env: baseEnv(), stdio: ["ignore", 2, 2] }); // stdout is the table's
  if (r.status !== 0) throw new Error(`${what}: exit ${r.status ?? r.signal}`);
  console.error(`${what}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
}

async function startSandboxServer() {
  const child = spawn(NODE, ["--import", "tsx", "src/sandbox/main.ts", "--port", "0"], { cwd: ROOT, env: baseEnv(), stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((resolve, reject) => {
    let buf = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (c) => {
      buf += c;
      const m = buf.match(/"msg":"sandbox listening".*?"url":"([^"]+)"/);
      if (m) resolve(m[1]);
    });
    child.on("exit", (code) => reject(new Error(`sandbox API server exited ${code}`)));
    setTimeout(() => reject(new Error("sandbox API server did not start")), 60_000);
  });
  return { url, stop: () => new Promise((r) => (child.exitCode !== null ? r() : (child.once("exit", r), child.kill("SIGTERM")))) };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? NaN : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

function version(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  return (r.stdout || r.stderr || "").split("\n")[0].trim();
}

// ---------------------------------------------------------------- main

async function main() {
  const started = new Date();
  const loadBefore = os.loadavg()[0];
  if (BUILD || !existsSync(join(ROOT, "dist", "src", "bin.js"))) run("npm", ["run", "--silent", "build"], "npm run build");
  let tmp;
  let sandbox;
  if (CLOUDFLARE && (!ONLY || ONLY.some((id) => id === "cf-worker" || id === "bare-workerd"))) {
    tmp = mkdtempSync(join(os.tmpdir(), "appwatch-cold-"));
    run(NODE, ["scripts/build-worker.mjs", "--outfile", join(tmp, "worker.js")], "scripts/build-worker.mjs");
    writeFileSync(join(tmp, "trivial.js"), TRIVIAL_WORKER);
    sandbox = await startSandboxServer();
    console.error(`sandbox API server for the Cloudflare forms: ${sandbox.url}`);
  }
  const list = forms(tmp, sandbox?.url);
  const samples = Object.fromEntries(list.map((f) => [f.id, []]));
  const failures = Object.fromEntries(list.map((f) => [f.id, []]));
  try {
    for (let round = 0; round <= ROUNDS; round++) {
      const warm = round === 0;
      const order = list.map((_, i) => list[(i + round) % list.length]);
      for (const form of order) {
        const r = await measure(form);
        const tag = warm ? "warm-up" : `round ${round}/${ROUNDS}`;
        console.error(`${tag} ${form.id}: ${r.ok ? `ready ${r.readyMs.toFixed(0)} ms (listening ${r.listeningMs.toFixed(0)}), stop ${r.stopMs.toFixed(0)} ms, exit 0` : `FAILED: ${r.error}`}`);
        if (!r.ok) {
          for (const line of r.output ?? []) console.error(`    | ${line.slice(0, 400)}`);
          for (const p of r.leftoverProcesses ?? []) console.error(`    left running after SIGTERM: ${p.slice(0, 200)} (then stopped by ${r.leftoverStoppedBy})`);
          failures[form.id].push({ round, ...r });
        }
        if (!warm) samples[form.id].push(r);
      }
    }
  } finally {
    await sandbox?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }

  const summary = list.map((f) => {
    const rs = samples[f.id];
    const ready = rs.filter((r) => r.readyMs !== undefined).map((r) => r.readyMs);
    return {
      id: f.id,
      runtime: f.runtime,
      bare: !!f.bare,
      command: f.shown,
      runs: rs.length,
      readyRuns: ready.length,
      medianMs: round1(median(ready)),
      minMs: round1(Math.min(...ready)),
      listeningMedianMs: round1(median(rs.filter((r) => r.listeningMs !== undefined).map((r) => r.listeningMs))),
      stopMedianMs: round1(median(rs.filter((r) => r.stopMs !== undefined).map((r) => r.stopMs))),
      exitCodes: rs.map((r) => `${r.exitCode ?? r.exitSignal}${r.leftover ? " + left running" : ""}`),
      allReadyMs: rs.map((r) => (r.readyMs === undefined ? null : round1(r.readyMs))),
    };
  });
  for (const s of summary) {
    const bare = summary.find((b) => b.bare && b.runtime === s.runtime);
    const both = bare && Number.isFinite(bare.medianMs) && Number.isFinite(s.medianMs);
    s.ratio = both ? Math.round((s.medianMs / bare.medianMs) * 100) / 100 : null;
    s.overBareMs = both ? round1(s.medianMs - bare.medianMs) : null;
  }
  const cpus = os.cpus();
  const json = {
    bench: "B8 cold start: spawn → first 200 on GET /readyz, sandbox mode",
    command: `node bench/cold-start/cold-start.mjs --rounds ${ROUNDS}`,
    rounds: ROUNDS,
    warmupRounds: 1,
    pollMs: POLL_MS,
    forms: summary,
    failures: Object.fromEntries(Object.entries(failures).filter(([, v]) => v.length > 0)),
    versions: {
      node: process.version,
      deno: version(DENO, ["--version"]),
      bun: version(BUN, ["--version"]),
      npm: version("npm", ["--version"]),
    },
    machine: { cpu: cpus[0]?.model.trim(), cores: cpus.length, memGiB: Math.round(os.totalmem() / 2 ** 30), os: `${os.type()} ${os.release()}`, loadBefore, loadAfter: os.loadavg()[0] },
    date: started.toISOString(),
    wallSeconds: Math.round((Date.now() - started.getTime()) / 1000),
  };
  if (!ONLY) writeFileSync(RESULTS, JSON.stringify(json, null, 2) + "\n");
  console.log(markdown(summary));
  if (!ONLY) console.error(`wrote ${RESULTS}`);
  for (const [id, fs] of Object.entries(json.failures)) console.error(`FAILED ${id}: ${fs.length} of ${ROUNDS + 1} runs (incl. warm-up): ${[...new Set(fs.map((f) => f.error))].join("; ")}`);
  return Object.keys(json.failures).length ? 1 : 0;
}

function round1(x) {
  return Number.isFinite(x) ? Math.round(x * 10) / 10 : null;
}

function markdown(summary) {
  const TITLE = { node: "Node", deno: "Deno", bun: "Bun", workerd: "workerd (miniflare)" };
  const rows = ["| runtime | form | median ms | min ms | ÷ bare | − bare (ms) | listening (median ms) | stop (median ms) | exit codes |", "|---|---|---:|---:|---:|---:|---:|---:|---|"];
  for (const s of summary) {
    const f = (x) => (x === null ? "—" : x.toFixed(0));
    rows.push(`| ${TITLE[s.runtime]} | ${s.bare ? "bare: " : ""}\`${s.command.replace(/\|/g, "\\|")}\` | ${f(s.medianMs)} | ${f(s.minMs)} | ${s.ratio === null ? "—" : `${s.ratio.toFixed(2)}×`} | ${s.bare ? "" : f(s.overBareMs)} | ${f(s.listeningMedianMs)} | ${f(s.stopMedianMs)} | ${[...new Set(s.exitCodes)].join(", ")}${s.readyRuns < s.runs ? ` (${s.runs - s.readyRuns} not ready)` : ""} |`);
  }
  return rows.join("\n");
}

process.exitCode = await main();
