/**
 * Issue 24, item 9a: a signal passed to `AppK8sClient.startWatching` is let go when the watch
 * ends. The program of examples/bun.ts (a sandbox, `startWatching(AbortSignal.timeout(10_000))`,
 * a snapshot, everything stopped) stayed alive on Deno 10 s after it had closed everything: the
 * client left its abort listener on the signal, and Deno keeps an `AbortSignal.timeout` timer
 * referenced while its signal has an abort listener (Node and Bun do not; on Node, `fetch` left
 * one more listener on it per request, undici's, until GC).
 *
 * tests/fixtures/lifetime-exit.ts runs that program in a child process of the runtime running
 * this suite, with a 60 s lifetime signal whose abort listeners it counts. The proof is its own
 * count (no abort listener left on the signal once stopped, on every runtime) and its exit: code
 * 0, on its own, after its `stopped` line. The deadline only guards against a hang: a leak would
 * hold the child until the signal's 60 s timer fires (the bug's delay was the examples' 10 s).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { runtimeCommand } from "./helpers/runtime-command.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const FIXTURE = "tests/fixtures/lifetime-exit.ts";
/** Only against a hang (a fixed child exits in about a second; a leaking one on Deno after 60 s). */
const GUARD_MS = 30_000;

interface Exit {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** The guard killed it. */
  hung: boolean;
}

function runFixture(mode: string): Promise<Exit> {
  const [cmd, argv] = runtimeCommand(FIXTURE, [mode]);
  const child = spawn(cmd, argv, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (s: string) => (stdout += s));
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  let hung = false;
  const guard = setTimeout(() => {
    hung = true;
    child.kill("SIGKILL");
  }, GUARD_MS);
  return new Promise((resolve, reject) => {
    child.on("error", (err) => {
      clearTimeout(guard);
      reject(err);
    });
    child.on("close", (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr, hung });
    });
  });
}

/** The fixture's `stopped {…}` line, parsed. */
function stoppedLine(stdout: string): { mode: string; listeners: number; events: number } | undefined {
  const line = stdout.split("\n").find((l) => l.startsWith("stopped "));
  return line ? JSON.parse(line.slice("stopped ".length)) : undefined;
}

describe("startWatching's lifetime signal", () => {
  const cases = [
    { mode: "stop", what: "the watch ran, a snapshot was read, then stopWatching()", events: 2 },
    { mode: "unreachable", what: "the start failed (no API server)", events: 0 },
  ];
  for (const c of cases) {
    test(`is let go when ${c.what}: no abort listener is left on it and the process exits on its own`, async () => {
      const exit = await runFixture(c.mode);
      const detail = `stdout:\n${exit.stdout}\nstderr:\n${exit.stderr}`;
      assert.equal(exit.hung, false, `the child did not exit within ${GUARD_MS} ms of its start after stopping (something holds its event loop)\n${detail}`);
      assert.deepEqual(stoppedLine(exit.stdout), { mode: c.mode, listeners: 0, events: c.events }, detail);
      assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null }, detail);
    });
  }
});
