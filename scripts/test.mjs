#!/usr/bin/env node
// The whole test command (`npm test`): type checks, then the one node:test suite
// under Node (tsx), Deno and Bun. Prints each step's result and a final
// "N passed, N failed" line; exits non-zero if anything failed.
//
//   node scripts/test.mjs                 # everything
//   node scripts/test.mjs node deno       # only some steps (typecheck, node, deno, bun)
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

const steps = {
  typecheck: {
    commands: [["npx", ["tsc", "--noEmit", "-p", "tsconfig.json"]], ["npx", ["deno", "check", "mod.ts", "src/", "tests/", "bench/"]]],
  },
  node: {
    commands: [["node", ["--import", "tsx", "--test", "--test-concurrency=1", ...files]]],
    // node:test (TAP): "# pass 12" / "# fail 0"
    count: (out) => ({ passed: last(out, /^# pass (\d+)$/m), failed: last(out, /^# fail (\d+)$/m) }),
  },
  deno: {
    commands: [["npx", ["deno", "test", "-A", "--no-check", ...files]]],
    // "ok | 32 passed (213 steps) | 0 failed" — node:test tests become steps under Deno
    count: (out) => {
      const m = [...stripAnsi(out).matchAll(/(?:ok|FAILED) \| (\d+) passed(?: \((\d+) steps?\))? \| (\d+) failed(?: \((\d+) steps?\))?/g)].at(-1);
      if (!m) return { passed: undefined, failed: undefined };
      return { passed: Number(m[2] ?? m[1]), failed: Number(m[4] ?? m[3]) };
    },
  },
  // The real kube-apiserver + etcd suite (tests/cluster/*.cluster.ts). Builds the binaries first
  // (cached). Not part of the default steps: `npm run test:cluster`.
  cluster: {
    commands: [["bash", ["scripts/build-kube.sh"]], ["node", ["--import", "tsx", "--test", "--test-concurrency=1", ...clusterFiles]]],
    count: (out) => ({ passed: last(out, /^# pass (\d+)$/m), failed: last(out, /^# fail (\d+)$/m) }),
    optIn: true,
  },
  bun: {
    commands: [["npx", ["bun", "test", "--timeout", "120000", ...files]]],
    // " 213 pass" / " 0 fail"
    count: (out) => ({ passed: last(out, /^\s*(\d+) pass$/m), failed: last(out, /^\s*(\d+) fail$/m) }),
  },
};

function last(text, re) {
  const all = [...stripAnsi(text).matchAll(new RegExp(re.source, "gm"))];
  return all.length ? Number(all.at(-1)[1]) : undefined;
}

function stripAnsi(s) {
  // deno-lint-ignore no-control-regex
  return s.replace(/\x1b\[[0-9;]*m/g, "");
}

function run(cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
    let out = "";
    const tee = (stream) => (chunk) => {
      out += chunk;
      stream.write(chunk);
    };
    child.stdout.on("data", tee(process.stdout));
    child.stderr.on("data", tee(process.stderr));
    child.on("close", (code) => resolve({ code: code ?? 1, out }));
  });
}

const wanted = process.argv.slice(2);
const chosen = wanted.length ? wanted : Object.keys(steps).filter((k) => !steps[k].optIn);
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
  const step = steps[name];
  const started = Date.now();
  let ok = true;
  let counts;
  for (const [cmd, args] of step.commands) {
    console.log(`\n=== ${name}: ${cmd} ${args.filter((a) => !a.startsWith("tests/")).join(" ")}${args.some((a) => a.startsWith("tests/")) ? " tests/…" : ""}`);
    const { code, out } = await run(cmd, args);
    if (code !== 0) ok = false;
    if (step.count) counts = step.count(out);
    if (!ok) break; // e.g. a failed build: do not run tests against nothing
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  if (counts) {
    if (counts.passed === undefined || counts.failed === undefined) {
      ok = false;
      summary.push(`${name}: could not read the runner's totals (${secs}s)`);
    } else {
      passed += counts.passed;
      failed += counts.failed;
      summary.push(`${name}: ${counts.passed} passed, ${counts.failed} failed (${secs}s)`);
    }
    if (!ok && counts.failed === 0) failed += 1; // a crash with no failed test still fails the run
  } else {
    summary.push(`${name}: ${ok ? "ok" : "FAILED"} (${secs}s)`);
    if (!ok) failed += 1;
  }
}

console.log("\n=== summary");
for (const line of summary) console.log(line);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
