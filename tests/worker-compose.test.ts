/**
 * The one composition (`src/service/compose.ts`) and the worker entries' start (`src/worker/start.ts`),
 * in process: every entry reaches the same `compose()` and none builds the service itself; the stop
 * ends the streams before the owner's listener closes and releases the cluster after it, once,
 * within the deadline; the entries' start exits 2 on a configuration mistake, 1 when the
 * cluster cannot be opened, and 0 after a graceful stop on a signal (a second, later one: 130).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger } from "../src/log.ts";
import { startSandboxCluster } from "../src/sandbox/mod.ts";
import { loadAdapter } from "../src/service/adapters/types.ts";
import { compose } from "../src/service/compose.ts";
import { startWorker } from "../src/worker/start.ts";
import { testSettings, waitFor } from "./helpers/service.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Every module reachable from `entry` through relative static and dynamic imports. */
function importGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/(?:^|[\s;])(?:import|export)\s[^;]*?\sfrom\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g)) {
      visit(resolve(dirname(file), (m[1] ?? m[2])!));
    }
  };
  visit(resolve(ROOT, entry));
  return seen;
}

/** Reads an SSE body, recording event names, until it ends. */
function readSse(res: Response) {
  const out = { events: [] as string[], ended: false };
  void (async () => {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) break;
      buf += value;
      for (const m of buf.matchAll(/^event: (\w+)$/gm)) out.events.push(m[1]!);
      buf = buf.slice(buf.lastIndexOf("\n") + 1);
    }
    out.ended = true;
  })();
  return out;
}

describe("the one composition", () => {
  test("startService and every worker entry reach compose(); only compose.ts builds AppK8sClient and createApp", () => {
    const composeFile = resolve(ROOT, "src/service/compose.ts");
    for (const entry of ["src/service/server.ts", "src/worker/deno.ts", "src/worker/bun.ts"]) {
      assert.ok(importGraph(entry).has(composeFile), `${entry} does not reach src/service/compose.ts`);
    }
    for (const file of ["src/service/server.ts", "src/worker/start.ts", "src/worker/deno.ts", "src/worker/bun.ts"]) {
      const text = readFileSync(resolve(ROOT, file), "utf8");
      assert.doesNotMatch(text, /new AppK8sClient\(|createApp\(/, `${file} composes the service itself`);
    }
    const own = readFileSync(composeFile, "utf8");
    assert.doesNotMatch(own, /from\s+["']node:/, "compose.ts imports a node: built-in");
    assert.doesNotMatch(own, /\b(Deno|Bun)\./, "compose.ts has runtime-specific code");
  });

  test("stop(): streams end before the owner's listener closes; the cluster is released after it; once", async () => {
    const cluster = await startSandboxCluster({ demoIntervalMs: 0 });
    let released = 0;
    const source = { ...cluster, close: async () => { released++; await cluster.close(); } };
    const service = compose(testSettings(), { logger: createLogger({ level: "error", sink: () => {} }), cluster: source });
    await service.watching;
    // The composition's fetch, called directly: no listener at all (SSE only, no adapter).
    const res = await service.fetch(new Request("http://appwatch.test/v1/watch", { headers: { accept: "text/event-stream" } }));
    assert.equal(res.status, 200);
    const sse = readSse(res);
    await waitFor(() => sse.events.includes("synced"), "the SSE snapshot");
    assert.equal((await service.fetch(new Request("http://appwatch.test/readyz"))).status, 200);

    const seen: { sseEnded: boolean; released: number }[] = [];
    const first = service.stop(async () => {
      seen.push({ sseEnded: sse.ended, released });
    });
    const second = service.stop(async () => assert.fail("a second stop ran its own steps"));
    assert.equal(first, second, "stop() is idempotent");
    await first;
    assert.deepEqual(seen, [{ sseEnded: true, released: 0 }], "the listener closes after the streams ended, before the cluster is released");
    assert.equal(released, 1, "the cluster is released once");
    assert.equal(service.apps.synced, false, "the watch is stopped");
    assert.equal((await service.fetch(new Request("http://appwatch.test/readyz"))).status, 503, "not ready once stopping");
  });

  test("stop() keeps to the deadline when a step hangs", async () => {
    const cluster = await startSandboxCluster({ demoIntervalMs: 0 });
    try {
      const service = compose(testSettings({ shutdownTimeoutSeconds: 0.05 }), { logger: createLogger({ level: "error", sink: () => {} }), cluster });
      await service.watching;
      let listenerCalled = false;
      // A listener that never closes: stop() still returns (by the deadline).
      await service.stop(() => {
        listenerCalled = true;
        return new Promise<void>(() => {});
      });
      assert.equal(listenerCalled, true);
    } finally {
      await cluster.close();
    }
  });
});

describe("the worker entries' start (startWorker)", () => {
  const quiet = () => {};
  class Exit {
    readonly code: number;
    constructor(code: number) {
      this.code = code;
    }
  }

  test("a configuration mistake exits 2 naming the variable; nothing is started", async () => {
    const lines: string[] = [];
    await assert.rejects(
      startWorker({ entry: "test", env: { APPWATCH_PORT: "eighty" }, adapter: () => assert.fail("no adapter before the settings are valid"), stderr: (l) => lines.push(l), exit: (code) => { throw new Exit(code); } }),
      (e: unknown) => e instanceof Exit && e.code === 2,
    );
    assert.match(lines.join("\n"), /APPWATCH_PORT/);
  });

  test("a kubeconfig that does not exist is a configuration error: one plain line, exit 2 (as appwatch serve)", async () => {
    const lines: string[] = [];
    const missing = resolve(ROOT, "no-such-dir/kubeconfig");
    await assert.rejects(
      startWorker({ entry: "test", env: { APPWATCH_KUBECONFIG: missing, HOME: resolve(ROOT, "no-such-dir") }, adapter: () => assert.fail("no adapter without a cluster"), stderr: (l) => lines.push(l), exit: (code) => { throw new Exit(code); } }),
      (e: unknown) => e instanceof Exit && e.code === 2,
    );
    assert.equal(lines.at(-1), `appwatch (test): kubeconfig ${missing}: cannot read file (ENOENT)`);
    assert.ok(!lines.some((l) => l.includes('"level":"error"')), lines.join("\n"));
  });

  test("a worker entry warns when it listens beyond loopback without auth (Deno's onListen, Bun at start), and only then", async () => {
    const adapter = await loadAdapter();
    for (const [tokens, host, warned] of [["", "0.0.0.0", true], ["", "127.0.0.1", false], ["a-token-of-some-length", "0.0.0.0", false]] as const) {
      const lines: string[] = [];
      let exited: () => void = () => {};
      const done = new Promise<void>((r) => (exited = r));
      const worker = await startWorker({
        entry: "test",
        env: { APPWATCH_SANDBOX: "true", APPWATCH_DEMO_INTERVAL_MS: "0", APPWATCH_LOG_LEVEL: "warn", ...(tokens ? { APPWATCH_AUTH_TOKENS: tokens } : {}) },
        adapter: () => adapter,
        stderr: (l) => lines.push(l),
        exit: () => {
          exited();
          return undefined as never;
        },
      });
      try {
        worker.listening("http://127.0.0.1:1", host);
      } finally {
        worker.onSignal(); // stop before asserting: a failed assertion must not leave the watch running
        await done;
      }
      const warnings = lines.filter((l) => (JSON.parse(l) as { msg: string }).msg.startsWith("NO AUTH ON"));
      assert.equal(warnings.length, warned ? 1 : 0, `${host} auth=${tokens !== ""}: ${lines.join("\n")}`);
      // F12: on Deno, beyond loopback, its limits are said too, auth or not.
      const limits = lines.filter((l) => (JSON.parse(l) as { msg: string }).msg.startsWith("DENO LIMITS ON"));
      assert.equal(limits.length, adapter.runtime === "deno" && host !== "127.0.0.1" ? 1 : 0, `${adapter.runtime} ${host}: ${lines.join("\n")}`);
    }
  });

  test("a signal stops gracefully, then exits 0; a repeat within a second is the same keypress; one later exits 130", async () => {
    const adapter = await loadAdapter();
    let now = 1_000;
    const exits: number[] = [];
    let exited: () => void = () => {};
    const done = new Promise<void>((r) => (exited = r));
    const worker = await startWorker({
      entry: "test",
      env: { APPWATCH_SANDBOX: "true", APPWATCH_DEMO_INTERVAL_MS: "0", APPWATCH_LOG_LEVEL: "error", APPWATCH_PORT: "0" },
      adapter: () => adapter,
      stderr: quiet,
      exit: (code) => {
        exits.push(code);
        exited();
        return undefined as never;
      },
      now: () => now,
    });
    assert.deepEqual(worker.address, { port: 0 }, "a port set in the environment is passed on; the host is left to the runtime");
    await worker.composition.watching;
    worker.onSignal();
    now += 500;
    worker.onSignal(); // the same Ctrl-C reaching twice
    await done;
    assert.deepEqual(exits, [0]);
    assert.equal(worker.composition.apps.synced, false, "the watch was stopped before the exit");
    now += 2_000;
    worker.onSignal();
    assert.deepEqual(exits, [0, 130]);
  });
});
