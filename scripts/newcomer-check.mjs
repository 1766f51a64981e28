#!/usr/bin/env node
// The README's newcomer path, run for real (CI calls this after `npm ci`):
//   terminal 1: npm start              → the service on the built-in sandbox (no cluster config here)
//   terminal 2: npm run watch          → the client prints the snapshot, then live changes
// Checks that events flow, prints the first lines the client printed and how long it took from
// `npm start` to the first app event, then presses Ctrl-C (SIGINT to both process groups) and
// expects an orderly stop: the service logs "stopped", no errors, no process left behind.
// The only deviation from the README: APPWATCH_PORT picks a free port instead of 8080.
import { spawn } from "node:child_process";
import { createServer } from "node:net";

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

function run(args, env) {
  // A clean environment as a newcomer has it: no kubeconfig, not in a cluster.
  // (KUBECONFIG unset, not pointed at a missing file: that is an error now, as in kubectl.)
  const clean = { ...process.env, ...env, HOME: "/tmp/appwatch-newcomer-home" };
  delete clean.KUBECONFIG;
  delete clean.KUBERNETES_SERVICE_HOST;
  const child = spawn("npm", args, { env: clean, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const out = [];
  const err = [];
  child.stdout.setEncoding("utf8").on("data", (d) => out.push(...d.split("\n").filter(Boolean)));
  child.stderr.setEncoding("utf8").on("data", (d) => err.push(...d.split("\n").filter(Boolean)));
  const exit = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, out, err, exit };
}

const until = async (pred, what, ms) => {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

const port = await freePort();
const t0 = Date.now();
const server = run(["start"], { APPWATCH_PORT: String(port), APPWATCH_HOST: "127.0.0.1" });
let client;
let failed = false;
try {
  await until(() => server.err.some((l) => l.includes('"appwatch listening"')), "the service to listen", 60_000);
  if (!server.err.some((l) => l.includes("SANDBOX MODE"))) throw new Error("no sandbox banner in the logs");
  client = run(["run", "watch", "--", "--url", `http://127.0.0.1:${port}`], {});
  await until(() => client.out.some((l) => / CREATE /.test(l)) && client.out.some((l) => /SYNCED/.test(l)), "the snapshot in the client", 60_000);
  const firstEvent = Date.now() - t0;
  // Live changes: the sandbox's demo activity changes an app every 2 s.
  const snapshotLines = client.out.length;
  await until(() => client.out.length > snapshotLines + 1, "live changes after the snapshot", 60_000);
  console.log(`newcomer-check: first app event ${firstEvent} ms after \`npm start\``);
  console.log("newcomer-check: the sandbox banner:");
  console.log("  " + server.err.find((l) => l.includes("SANDBOX MODE")));
  console.log("newcomer-check: `npm run watch` printed:");
  for (const line of client.out.slice(0, 14)) console.log("  " + line);
} catch (err) {
  failed = true;
  console.error(`newcomer-check: FAILED: ${err.message}`);
  console.error("server stderr:\n" + server.err.slice(-20).join("\n"));
  if (client) console.error("client stdout:\n" + client.out.slice(-20).join("\n") + "\nclient stderr:\n" + client.err.slice(-20).join("\n"));
} finally {
  // SIGINT to the whole npm process group: what Ctrl-C does in a terminal.
  for (const p of [client, server]) if (p) try { process.kill(-p.child.pid, "SIGINT"); } catch { /* gone */ }
  for (const p of [client, server]) {
    if (!p) continue;
    const { code } = await Promise.race([p.exit, new Promise((r) => setTimeout(() => r({ code: "timeout" }), 15_000))]);
    // npm itself re-raises the signal (exit "null SIGINT"); what matters is that our process stopped in order.
    if (code === "timeout") {
      failed = true;
      console.error(`newcomer-check: ${p === server ? "npm start" : "npm run watch"} did not stop within 15 s`);
    }
    await new Promise((r) => setTimeout(r, 500));
    let alive = false;
    try {
      process.kill(-p.child.pid, 0);
      alive = true;
    } catch { /* the whole group is gone */ }
    if (alive) {
      failed = true;
      console.error(`newcomer-check: processes of ${p === server ? "npm start" : "npm run watch"} are still running`);
      try { process.kill(-p.child.pid, "SIGKILL"); } catch { /* gone */ }
    }
  }
  if (!server.err.some((l) => l.includes('"msg":"stopped"'))) {
    failed = true;
    console.error("newcomer-check: the service did not log its orderly stop");
  }
  const errors = server.err.filter((l) => l.includes('"level":"error"'));
  if (errors.length) {
    failed = true;
    console.error("newcomer-check: the service logged errors:\n" + errors.join("\n"));
  }
}
console.log(failed ? "newcomer-check: FAILED" : "newcomer-check: ok");
process.exit(failed ? 1 : 0);
