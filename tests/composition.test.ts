/**
 * The composition root: `startService` runs on the cluster source it is given
 * (and closes it on stop); only the CLI chooses between the sandbox and a real
 * cluster; the production modules never load the sandbox, which has its own
 * package entry (`./sandbox`) instead of sharing `mod.ts`.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as mod from "../mod.ts";
import * as sandboxEntry from "../src/sandbox/mod.ts";
import { runCli } from "../src/cli.ts";
import { KubeClient } from "../src/kube/client.ts";
import { createLogger } from "../src/log.ts";
import { startSandbox } from "../src/sandbox/mod.ts";
import { startService } from "../src/service/server.ts";
import { http, ksvc, testSettings, waitFor } from "./helpers/service.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Every module reachable from `entry` through static and dynamic relative imports. */
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

describe("composition root", () => {
  test("the production modules never load the sandbox: server.ts and mod.ts reach nothing under src/sandbox/", () => {
    for (const entry of ["src/service/server.ts", "mod.ts"]) {
      const reached = [...importGraph(entry)].map((f) => f.slice(ROOT.length + 1)).filter((f) => f.startsWith("src/sandbox/"));
      assert.deepEqual(reached, [], `${entry} reaches the sandbox`);
    }
  });

  test("the sandbox is its own entry (./sandbox in deno.json), not part of mod.ts", () => {
    const deno = JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")) as { exports: Record<string, string> };
    assert.equal(deno.exports["./sandbox"], "./src/sandbox/mod.ts");
    assert.equal(deno.exports["."], "./mod.ts");
    for (const name of ["startSandbox", "seedDemo", "startDemoActivity", "Sandbox"]) {
      assert.ok(!(name in mod), `mod.ts still exports ${name}`);
      assert.ok(name in sandboxEntry, `src/sandbox/mod.ts lacks ${name}`);
    }
    assert.equal(typeof sandboxEntry.startSandboxCluster, "function");
    assert.equal(typeof mod.connectCluster, "function");
  });

  test("startService watches the cluster source it is given and closes it on stop()", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    sb.sandbox.create("services", ksvc("mine", "dev", "only-app"));
    const client = new KubeClient({ server: sb.url, namespace: "flyte" });
    let closed = 0;
    const cluster = { client, namespaces: ["flyte"], describe: "a test cluster", close: async () => void closed++ };
    const logs: string[] = [];
    const service = await startService(testSettings(), { logger: createLogger({ level: "info", sink: (l) => logs.push(l) }), cluster });
    try {
      await service.watching;
      const apps = await http(`${service.url}/v1/apps`);
      assert.deepEqual(apps.body.apps.map((a: { metadata: { id: { name: string } } }) => a.metadata.id.name), ["only-app"]);
      assert.equal(service.cluster, cluster);
      assert.match(logs.find((l) => l.includes('"appwatch listening"')) ?? "", /"cluster":"a test cluster"/);
    } finally {
      await service.stop();
      await client.close();
      await sb.close();
    }
    assert.equal(closed, 1, "stop() closes the cluster source");
  });

  test("events and serve share the CLI's one choice: no cluster configuration at all → the sandbox, with the SANDBOX MODE line", async () => {
    const home = await mkdtemp(join(tmpdir(), "appwatch-home-"));
    const out: string[] = [];
    const err: string[] = [];
    const abort = new AbortController();
    try {
      let ended = false;
      const done = runCli(["events", "--demo-interval-ms", "0"], { stdout: (l) => out.push(l), stderr: (l) => err.push(l), signal: abort.signal, env: { HOME: home } });
      void done.finally(() => (ended = true));
      await waitFor(() => ended || out.some((l) => l.includes('"synced"')), () => `synced\n${err.join("\n")}`, 20_000);
      abort.abort();
      assert.equal(await done, 0, err.join("\n"));
      assert.match(err.join("\n"), /"msg":"SANDBOX MODE: no cluster configuration found/);
      assert.equal(out.filter((l) => l.includes('"added"')).length, 6, "the same demo apps as serve");
    } finally {
      abort.abort();
      await rm(home, { recursive: true, force: true });
    }
  });
});
