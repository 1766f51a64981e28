/**
 * Signals reach the service however it was started: `npm start`, `npm run watch`, the launcher
 * (`scripts/launch.mjs`, also behind a shell that does not `exec` it), `deno task start` and
 * `bun run start`. Each case signals ONLY the outermost PID (what a supervisor does) with SIGTERM
 * or SIGINT, then checks the outcome: the service logged its orderly stop, the port refuses
 * connections, and none of the processes that were running under the outer one is left.
 *
 * Linux only (/proc for the process tree); runs under Node (the launchers are spawned, so the
 * runtime running this file does not matter; Deno and Bun skip it with a message).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { join } from "node:path";
import process from "node:process";
import { waitFor } from "./helpers/run.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const ROOT = new URL("..", import.meta.url).pathname;
const DENO = join(ROOT, "node_modules", "deno", "deno");
const BUN = join(ROOT, "node_modules", "bun", "bin", "bun.exe");
const skip = g.Deno || g.Bun
  ? "spawns npm, node, deno and bun itself: run under Node only"
  : process.platform !== "linux"
  ? "reads the process tree from /proc (Linux)"
  : !existsSync(DENO) || !existsSync(BUN)
  ? "needs node_modules' deno and bun (npm ci)"
  : false;
if (skip) console.log(`!! launch-signals skipped: ${skip}`);

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** Resolves true when something accepts on the port, false when the connection is refused. */
const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const sock = connect(port, "127.0.0.1");
    sock.once("connect", () => {
      sock.destroy();
      resolve(true);
    });
    sock.once("error", () => resolve(false));
  });

/** Every descendant of pid, read from /proc/<pid>/task/<tid>/children. */
function descendants(pid: number): number[] {
  const out: number[] = [];
  const walk = (p: number) => {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const t of tasks) {
      let text = "";
      try {
        text = readFileSync(`/proc/${p}/task/${t}/children`, "utf8");
      } catch {
        continue;
      }
      for (const c of text.trim().split(/\s+/).filter(Boolean).map(Number)) {
        out.push(c);
        walk(c);
      }
    }
  };
  walk(pid);
  return out;
}

/** A process that still runs (a zombie waiting to be reaped counts as gone). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

interface Started {
  child: ChildProcess;
  lines: string[];
  exit: Promise<{ code: number | null; signal: string | null }>;
}

function start(cmd: string, args: string[], env: Record<string, string> = {}): Started {
  const clean: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1", KUBECONFIG: "/nonexistent/kubeconfig", ...env };
  delete clean.KUBERNETES_SERVICE_HOST;
  // npm_* variables from an outer `npm test` would make the inner npm/bun think they are nested.
  for (const k of Object.keys(clean)) if (k.startsWith("npm_")) delete clean[k];
  const child = spawn(cmd, args, { cwd: ROOT, env: clean as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  for (const s of [child.stdout!, child.stderr!]) {
    s.setEncoding("utf8");
    let buf = "";
    s.on("data", (d: string) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
  }
  const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, lines, exit };
}

const tail = (lines: string[]) => lines.slice(-15).join("\n");

/** Signals only the outer PID, then checks the outcome. */
async function signalAndCheck(p: Started, sig: "SIGTERM" | "SIGINT", opts: { port?: number; stopLine: RegExp }) {
  const tree = descendants(p.child.pid!);
  assert.ok(tree.length > 0, `no process under the outer one:\n${tail(p.lines)}`);
  process.kill(p.child.pid!, sig);
  // A deadline, not a timing rule: an outer process that never exits fails here instead of hanging.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const exited = await Promise.race([p.exit.then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), 30_000)))]);
  clearTimeout(timer);
  assert.ok(exited, `the outer process did not exit after ${sig} (still running: ${[p.child.pid!, ...tree].filter(alive).join(", ")}):\n${tail(p.lines)}`);
  // The outer process waits for its children; anything still running now was left behind
  // (give init a moment to reap what already exited).
  await waitFor(() => !tree.some(alive), `no process left of ${tree.join(", ")} (alive: ${tree.filter(alive).join(", ")})`, 15_000).catch((err) => {
    for (const pid of tree) if (alive(pid)) process.kill(pid, "SIGKILL");
    throw err;
  });
  assert.ok(p.lines.some((l) => opts.stopLine.test(l)), `no orderly stop (${opts.stopLine}) in the output:\n${tail(p.lines)}`);
  if (opts.port !== undefined) assert.equal(await accepts(opts.port), false, `port ${opts.port} still accepts connections`);
}

const listening = (p: Started) => waitFor(() => p.lines.some((l) => l.includes('"appwatch listening"')), "the service to listen", 90_000);
const STOPPED = /"msg":"stopped"/;

describe("signals to the outermost process stop the service and leave nothing behind", { skip }, () => {
  const serviceCases: { name: string; cmd: (port: number) => [string, string[]]; sig: "SIGTERM" | "SIGINT" }[] = [
    { name: "npm start, SIGTERM", cmd: () => ["npm", ["start", "--", "--sandbox"]], sig: "SIGTERM" },
    { name: "npm start, SIGINT", cmd: () => ["npm", ["start", "--", "--sandbox"]], sig: "SIGINT" },
    { name: "the launcher, SIGTERM", cmd: () => [process.execPath, ["scripts/launch.mjs", "src/main.ts", "--sandbox"]], sig: "SIGTERM" },
    // A shell that does not exec the launcher dies on SIGTERM without passing it on: the
    // launcher notices its parent is gone.
    { name: "the launcher behind a shell that does not exec it, SIGTERM", cmd: () => ["/bin/sh", ["-c", `"${process.execPath}" scripts/launch.mjs src/main.ts --sandbox; :`]], sig: "SIGTERM" },
    { name: "deno task start, SIGTERM", cmd: () => [DENO, ["task", "start", "--sandbox"]], sig: "SIGTERM" },
    { name: "deno task start, SIGINT", cmd: () => [DENO, ["task", "start", "--sandbox"]], sig: "SIGINT" },
    { name: "bun run start, SIGTERM", cmd: () => [BUN, ["run", "start", "--sandbox"]], sig: "SIGTERM" },
  ];
  for (const c of serviceCases) {
    test(c.name, async () => {
      const port = await freePort();
      const [cmd, args] = c.cmd(port);
      const p = start(cmd, args, { APPWATCH_PORT: String(port), APPWATCH_HOST: "127.0.0.1" });
      try {
        await listening(p);
        assert.equal(await accepts(port), true, "the service listens on its port");
        await signalAndCheck(p, c.sig, { port, stopLine: STOPPED });
      } finally {
        for (const pid of [p.child.pid!, ...descendants(p.child.pid!)]) if (alive(pid)) process.kill(pid, "SIGKILL");
      }
    });
  }

  test("npm run watch, SIGTERM: the client stops and leaves nothing behind", async () => {
    const port = await freePort();
    const server = start(process.execPath, ["--import", "tsx", "src/main.ts", "--sandbox"], { APPWATCH_PORT: String(port), APPWATCH_HOST: "127.0.0.1" });
    let client: Started | undefined;
    try {
      await listening(server);
      client = start("npm", ["run", "watch", "--", "--url", `http://127.0.0.1:${port}`]);
      const c = client;
      await waitFor(() => c.lines.some((l) => /SYNCED/.test(l)), "the client's snapshot", 90_000);
      await signalAndCheck(c, "SIGTERM", { stopLine: /SYNCED/ });
    } finally {
      for (const p of [client, server]) {
        if (!p) continue;
        for (const pid of [p.child.pid!, ...descendants(p.child.pid!)]) if (alive(pid)) process.kill(pid, "SIGKILL");
      }
      await server.exit;
    }
  });
});
