#!/usr/bin/env node
// The whole test command (`npm test`): type checks, then the one node:test suite
// under Node (tsx), Deno and Bun. Prints each step's result and a final
// "N passed, N failed" line; exits non-zero if anything failed.
//
//   node scripts/test.mjs                 # everything
//   node scripts/test.mjs node deno       # only some steps (typecheck, node, deno, bun, release)
//   node scripts/test.mjs cluster         # the real kube-apiserver suite (builds it first; opt-in)
//   TEST_FILES="tests/ndjson.test.ts" node scripts/test.mjs node
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";

const files = process.env.TEST_FILES
  ? process.env.TEST_FILES.split(/\s+/).filter(Boolean)
  : readdirSync("tests").filter((f) => f.endsWith(".test.ts")).sort().map((f) => `tests/${f}`);

const clusterFiles = process.env.CLUSTER_TEST_FILES
  ? process.env.CLUSTER_TEST_FILES.split(/\s+/).filter(Boolean)
  : readdirSync("tests/cluster").filter((f) => f.endsWith(".cluster.ts")).sort().map((f) => `tests/cluster/${f}`);

// node:test (TAP): "# pass 12" / "# fail 0"
const nodeCount = (out) => ({ passed: last(out, /^# pass (\d+)$/m), failed: last(out, /^# fail (\d+)$/m) });
// "ok | 32 passed (213 steps) | 0 failed" — node:test tests become steps under Deno
const denoCount = (out) => {
  const m = [...stripAnsi(out).matchAll(/(?:ok|FAILED) \| (\d+) passed(?: \((\d+) steps?\))? \| (\d+) failed(?: \((\d+) steps?\))?/g)].at(-1);
  if (!m) return { passed: undefined, failed: undefined };
  return { passed: Number(m[2] ?? m[1]), failed: Number(m[4] ?? m[3]) };
};
// " 213 pass" / " 0 fail"
const bunCount = (out) => ({ passed: last(out, /^\s*(\d+) pass$/m), failed: last(out, /^\s*(\d+) fail$/m) });

const nodeTest = (list) => ({ cmd: "node", args: ["--import", "tsx", "--test", "--test-reporter=tap", "--test-concurrency=1", "--test-timeout=600000", ...list], count: nodeCount });
const denoTest = (list) => ({ cmd: "npx", args: ["deno", "test", "-A", "--no-check", ...list], count: denoCount });
// Bun only runs files matching its own test globs unless the path is explicit ("./…").
const bunTest = (list) => ({ cmd: "npx", args: ["bun", "test", "--timeout", "300000", ...list.map((f) => `./${f}`)], count: bunCount });

const steps = {
  typecheck: [
    { cmd: "npx", args: ["tsc", "--noEmit", "-p", "tsconfig.json"] },
    // The board's browser script (src/service/board/client.js, JSDoc types) against the DOM only,
    // and its embedding (client.gen.ts) current.
    { cmd: "npx", args: ["tsc", "--noEmit", "-p", "tsconfig.board.json"] },
    { cmd: "node", args: ["scripts/gen-board.mjs", "--check"] },
    // --doc: every code block in JSDoc (the @example tags, mod.ts's front page) type-checks too.
    { cmd: "npx", args: ["deno", "check", "--doc", "mod.ts", "src/", "tests/", "bench/", "scripts/cluster.ts"] },
  ],
  node: [nodeTest(files)],
  deno: [denoTest(files)],
  bun: [bunTest(files)],
  // Release checks: `deno publish --dry-run`, the examples run on Node and Bun, deploy/ invariants, a
  // scratch Deno consumer type-checked (`deno check`) and tested (`deno test`) outside the repo;
  // the npm package packed, installed outside the repo and used from there (scripts/pack-check.mjs).
  release: [{ cmd: "node", args: ["scripts/publish-check.mjs"] }, { cmd: "node", args: ["scripts/pack-check.mjs"] }],
  // The real kube-apiserver + etcd suite (tests/cluster/*.cluster.ts) on all three runtimes.
  // Builds the binaries first (cached). Opt-in: `npm run test:cluster`.
  cluster: [{ cmd: "bash", args: ["scripts/build-kube.sh"] }, nodeTest(clusterFiles), denoTest(clusterFiles), bunTest(clusterFiles)],
};
const optIn = new Set(["cluster"]);

function last(text, re) {
  const all = [...stripAnsi(text).matchAll(new RegExp(re.source, "gm"))];
  return all.length ? Number(all.at(-1)[1]) : undefined;
}

function stripAnsi(s) {
  // deno-lint-ignore no-control-regex
  return s.replace(/\x1b\[[0-9;]*m/g, "");
}

// A command that outlives this is killed and fails its step: a hung test (a handle left open, a
// socket never uncorked) must fail the run in minutes, not eat CI's whole budget.
const stepMinutes = Number(process.env.APPWATCH_STEP_MINUTES ?? 30);
let current; // the running child's process group, killed with us on Ctrl-C

function run(cmd, args) {
  return new Promise((resolve) => {
    // Its own process group, so that a timeout also stops what it spawned (npx → deno, servers).
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" }, detached: true });
    current = child;
    let out = "";
    let timedOut = false;
    const tee = (stream) => (chunk) => {
      out += chunk;
      stream.write(chunk);
    };
    child.stdout.on("data", tee(process.stdout));
    child.stderr.on("data", tee(process.stderr));
    const timer = setTimeout(() => {
      timedOut = true;
      console.log(`\n=== ${cmd}: still running after ${stepMinutes} min (APPWATCH_STEP_MINUTES): killed`);
      killGroup(child);
    }, stepMinutes * 60_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      current = undefined;
      resolve({ code: timedOut ? 124 : code ?? 1, out });
    });
  });
}

function killGroup(child) {
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    if (current) killGroup(current);
    process.exit(130);
  });
}

const wanted = process.argv.slice(2);
const chosen = wanted.length ? wanted : Object.keys(steps).filter((k) => !optIn.has(k));
if (chosen.includes("cluster") && process.env.APPWATCH_SKIP_REAL_CLUSTER === "1") {
  console.log("\n" + "!".repeat(78));
  console.log("!! WARNING: APPWATCH_SKIP_REAL_CLUSTER=1 — the real kube-apiserver suite is SKIPPED.");
  console.log("!! Nothing was tested against a real API server in this run.");
  console.log("!".repeat(78) + "\n");
  chosen.splice(chosen.indexOf("cluster"), 1);
}
for (const name of chosen) if (!steps[name]) throw new Error(`unknown step "${name}"; steps: ${Object.keys(steps).join(", ")}`);

const summary = [];
let passed = 0;
let failed = 0;
for (const name of chosen) {
  const started = Date.now();
  let ok = true;
  let counted = false;
  let stepPassed = 0;
  let stepFailed = 0;
  for (const { cmd, args, count } of steps[name]) {
    const shown = args.filter((a) => !a.includes("tests/")).join(" ") + (args.some((a) => a.includes("tests/")) ? " tests/…" : "");
    console.log(`\n=== ${name}: ${cmd} ${shown}`);
    const { code, out } = await run(cmd, args);
    if (count) {
      const c = count(out);
      if (c.passed === undefined || c.failed === undefined) {
        console.log(`=== ${name}: could not read the runner's totals`);
        ok = false;
      } else {
        counted = true;
        stepPassed += c.passed;
        stepFailed += c.failed;
      }
    }
    if (code !== 0) ok = false;
    if (!ok) break; // e.g. a failed build: do not run tests against nothing
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  passed += stepPassed;
  failed += stepFailed;
  if (!ok && stepFailed === 0) failed += 1; // a crash or a failed command still fails the run
  summary.push(counted ? `${name}: ${stepPassed} passed, ${stepFailed} failed${ok ? "" : " (FAILED)"} (${secs}s)` : `${name}: ${ok ? "ok" : "FAILED"} (${secs}s)`);
}

console.log("\n=== summary");
for (const line of summary) console.log(line);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
