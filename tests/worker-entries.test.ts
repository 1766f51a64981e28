/**
 * The worker entries as users run them, each a real child process on loopback: `deno serve` on
 * `src/worker/deno.ts` and `bun run src/worker/bun.ts` (Bun's default export), watching a sandbox
 * API server that this test process runs, named by a kubeconfig file in a temp dir (the entry
 * finds the cluster the way kubectl does). A real WebSocket client and a real SSE client see the
 * snapshot and a live change; REST, Connect (HTTP/1.1 JSON) and the board answer; SIGTERM closes
 * the WebSocket with 1001, ends SSE, and the process exits 0. The Bun entry's quiet streams
 * outlive Bun's HTTP idle timeout. An entry whose runtime binary is missing is skipped, saying so.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { type RunningSandbox, startSandbox } from "../src/sandbox/mod.ts";
import { BOARD_JS } from "../src/service/board/client.gen.ts";
import { waitFor } from "./helpers/run.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const WS: typeof WebSocket = g.WebSocket ?? (await import("ws")).default;
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const NS = "flyte";
const KSVC = `/apis/serving.knative.dev/v1/namespaces/${NS}/services`;

/** The runtime binary: the one running this suite when it is that runtime, else the npm-installed one. */
function binary(runtime: "deno" | "bun"): string | undefined {
  if (runtime === "deno" && g.Deno) return g.Deno.execPath();
  if (runtime === "bun" && g.Bun) return process.execPath;
  const installed = join(ROOT, "node_modules", ".bin", runtime);
  return existsSync(installed) ? installed : undefined;
}

interface Entry {
  runtime: "deno" | "bun";
  /** argv after the binary. */
  args: string[];
  /** Extra environment (the listen address where the runtime reads it from there). */
  env: Record<string, string>;
  /** The URL the entry serves on, from its output. */
  urlOf(p: Proc): string | undefined;
}

const ENTRIES: Entry[] = [
  {
    runtime: "deno",
    args: ["serve", "-A", "--port", "0", "--host", "127.0.0.1", "src/worker/deno.ts"],
    env: {},
    urlOf: (p) => p.logs.find((l) => l.msg === "appwatch listening")?.url as string | undefined,
  },
  {
    runtime: "bun",
    args: ["run", "src/worker/bun.ts"],
    env: { APPWATCH_PORT: "0", APPWATCH_HOST: "127.0.0.1" },
    urlOf: (p) => p.stdout.match(/Started server: (http:\/\/\S+?)\/?\s/)?.[1],
  },
];

interface Proc {
  child: ChildProcess;
  logs: Record<string, unknown>[];
  stdout: string;
  stderr: string;
  exit: Promise<{ code: number | null; signal: string | null }>;
}

function spawnEntry(bin: string, entry: Entry, env: Record<string, string>): Proc {
  const child = spawn(bin, entry.args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1", ...entry.env, ...env } });
  const proc: Proc = { child, logs: [], stdout: "", stderr: "", exit: undefined as never };
  let buf = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    proc.stderr += chunk;
    buf += chunk;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        proc.logs.push(JSON.parse(line));
      } catch {
        proc.logs.push({ raw: line });
      }
    }
  });
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (chunk: string) => (proc.stdout += chunk));
  proc.exit = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return proc;
}

function ksvc(project: string, domain: string, name: string): Record<string, unknown> {
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    metadata: {
      name: `${name}-${project}-${domain}`.slice(0, 63),
      namespace: NS,
      labels: { "flyte.org/app-managed": "true", "flyte.org/project": project, "flyte.org/domain": domain, "flyte.org/app-name": name },
      annotations: { "flyte.org/app-id": `${project}/${domain}/${name}` },
    },
    spec: { template: { spec: { containers: [{ image: "ghcr.io/acme/worker:v1" }] } } },
  };
}

async function createApp(sandboxUrl: string, name: string): Promise<void> {
  const res = await fetch(`${sandboxUrl}${KSVC}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ksvc("e2e", "development", name)) });
  assert.equal(res.status, 201, await res.text());
}

type Frame = Record<string, unknown>;
const kindOf = (f: Frame) => Object.keys(f).find((k) => k !== "resume")!;
const nameOf = (f: Frame): string | undefined => {
  const body = (f.createEvent ?? f.updateEvent ?? f.deleteEvent) as { app?: { metadata?: { id?: { name?: string } } } } | undefined;
  return body?.app?.metadata?.id?.name;
};

/** A WebSocket client that records frames and the close. */
function wsClient(url: string) {
  const ws = new WS(`${url.replace(/^http/, "ws")}/v1/watch`);
  const client = { frames: [] as Frame[], close: undefined as { code: number; reason: string } | undefined };
  ws.onmessage = (e: MessageEvent) => client.frames.push(JSON.parse(String(e.data)));
  ws.onclose = (e: CloseEvent) => (client.close = { code: e.code, reason: e.reason });
  return client;
}

/** An SSE client (fetch + a stream reader) that records events and whether the body ended. */
async function sseClient(url: string) {
  const res = await fetch(`${url}/v1/watch`, { headers: { accept: "text/event-stream" } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  const client = { events: [] as { event: string; data: Frame }[], ended: false };
  void (async () => {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const fields: Record<string, string> = {};
        for (const line of buf.slice(0, i).split("\n")) {
          const c = line.indexOf(": ");
          if (c > 0) fields[line.slice(0, c)] = line.slice(c + 2);
        }
        buf = buf.slice(i + 2);
        if (fields.event && fields.data) client.events.push({ event: fields.event, data: JSON.parse(fields.data) });
      }
    }
    client.ended = true;
  })();
  return client;
}

for (const entry of ENTRIES) {
  const bin = binary(entry.runtime);
  describe(`worker entry: ${entry.args.join(" ")}`, { skip: bin ? false : `no ${entry.runtime} binary (node_modules/.bin/${entry.runtime} missing: run npm ci)` }, () => {
    let sandbox: RunningSandbox;
    let dir = "";
    let kubeconfig = "";

    before(async () => {
      sandbox = await startSandbox();
      dir = await mkdtemp(join(tmpdir(), "appwatch-worker-"));
      kubeconfig = join(dir, "config");
      await writeFile(kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: sb, cluster: {server: "${sandbox.url}"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: sb, user: u, namespace: ${NS}}}]
current-context: c
`);
      await createApp(sandbox.url, "seeded");
    });

    after(async () => {
      await sandbox?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    test("a configuration mistake stops the start: exit 2, naming the variable", async () => {
      const proc = spawnEntry(bin!, entry, { KUBECONFIG: kubeconfig, HOME: dir, APPWATCH_SHUTDOWN_TIMEOUT: "soon" });
      const { code, signal } = await proc.exit;
      assert.equal(code, 2, `exit ${code} ${signal}: ${proc.stderr}`);
      assert.match(proc.stderr, /APPWATCH_SHUTDOWN_TIMEOUT/);
      assert.doesNotMatch(proc.stdout, /Started server/, "nothing was served");
    });

    test("serves WebSocket, SSE, REST, Connect and the board from the cluster; SIGTERM: WebSocket 1001, SSE ended, exit 0", async () => {
      const proc = spawnEntry(bin!, entry, { KUBECONFIG: kubeconfig, HOME: dir, APPWATCH_NAMESPACE: NS, APPWATCH_SHUTDOWN_TIMEOUT: "10" });
      try {
        await waitFor(() => (entry.urlOf(proc) !== undefined && proc.logs.some((l) => l.msg === "initial sync done; ready")) || proc.child.exitCode !== null, "the entry to listen and sync", 60_000);
        const url = entry.urlOf(proc);
        assert.ok(url, `the entry did not start: ${proc.stdout}\n${proc.stderr}`);
        assert.ok(!proc.logs.some((l) => String(l.msg).startsWith("SANDBOX MODE")), "it watches the kubeconfig's cluster, not a sandbox of its own");
        assert.equal((await fetch(`${url}/readyz`)).status, 200);

        const ws = wsClient(url);
        const sse = await sseClient(url);
        await waitFor(() => ws.frames.some((f) => kindOf(f) === "synced") && sse.events.some((e) => e.event === "synced"), "both snapshots", 20_000);
        assert.deepEqual(ws.frames.slice(0, 3).map((f) => `${kindOf(f)} ${nameOf(f) ?? ""}`.trim()), ["start", "createEvent seeded", "synced"]);
        assert.deepEqual(sse.events.map((e) => `${e.event} ${nameOf(e.data) ?? ""}`.trim()), ["start", "createEvent seeded", "synced"]);

        // A live change reaches both.
        await createApp(sandbox.url, "live");
        await waitFor(() => ws.frames.some((f) => kindOf(f) === "createEvent" && nameOf(f) === "live") && sse.events.some((e) => e.event === "createEvent" && nameOf(e.data) === "live"), "the live create on both streams", 20_000);

        // REST.
        const list = await fetch(`${url}/v1/apps`);
        assert.equal(list.status, 200);
        const apps = ((await list.json()) as { apps: Frame[] }).apps.map((a) => (a as { metadata: { id: { name: string } } }).metadata.id.name).sort();
        assert.deepEqual(apps, ["live", "seeded"]);
        assert.equal((await fetch(`${url}/v1/apps/e2e/development/seeded`)).status, 200);
        const missing = await fetch(`${url}/v1/apps/e2e/development/nope`);
        assert.equal(missing.status, 404);
        assert.equal(((await missing.json()) as { code: string }).code, "not_found");
        const bad = await fetch(`${url}/v1/apps?limit=lots`);
        assert.equal(bad.status, 400);
        assert.equal(((await bad.json()) as { code: string }).code, "invalid_argument");

        // Connect over HTTP/1.1 JSON.
        const rpc = await fetch(`${url}/internal/flyteidl2.app.AppService/List`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ project: { name: "e2e", domain: "development" } }),
        });
        assert.equal(rpc.status, 200);
        const listed = (await rpc.json()) as { apps?: { metadata: { id: { name: string } } }[] };
        assert.deepEqual(listed.apps?.map((a) => a.metadata.id.name).sort(), ["live", "seeded"]);

        // The board.
        const board = await fetch(`${url}/`);
        assert.equal(board.status, 200);
        assert.match(board.headers.get("content-type") ?? "", /^text\/html/);
        const html = await board.text();
        assert.match(html, /^<!doctype html>/i);
        const script = await fetch(new URL(/<script type="module" src="([^"]+)"/.exec(html)?.[1] ?? "board/app.js", `${url}/`));
        assert.equal(script.status, 200);
        assert.equal(await script.text(), BOARD_JS, "the page's script is src/service/board/client.js as is");

        if (entry.runtime === "bun") await quietPastBunIdleTimeout(sandbox.url, ws, sse);

        // Graceful shutdown.
        proc.child.kill("SIGTERM");
        await waitFor(() => ws.close !== undefined && sse.ended, "both clients to be closed", 20_000);
        assert.equal(ws.close!.code, 1001, `close ${JSON.stringify(ws.close)}`);
        const { code, signal } = await proc.exit;
        // Deno's node:child_process reports a child that handled SIGTERM as (null, "SIGTERM") even
        // when it exited 0; the "stopped" log line proves the orderly path there.
        if (!g.Deno) assert.equal(code, 0, `exit ${code} ${signal}: ${proc.stderr.slice(-2000)}`);
        assert.ok(proc.logs.some((l) => l.msg === "stopped"), "the entry logged its orderly stop");
        await assert.rejects(fetch(`${url}/healthz`), "the port no longer accepts");
      } finally {
        if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill("SIGKILL");
        await proc.exit;
      }
    });
  });
}

/**
 * Bun's HTTP idle timeout is 10 s by default and counts only what the peer sends (the server's
 * own writes, heartbeats included, do not reset it), so an SSE stream whose client sends nothing
 * is cut unless the entry exempts it. This waits 12 s of real time once, the clients sending
 * nothing, then proves both streams are open and still deliver: there is no event to wait for
 * instead, since what is proven is that nothing happens. The client's runtime plays no part in
 * the server's timeout, so it runs under the Node runner only.
 */
async function quietPastBunIdleTimeout(sandboxUrl: string, ws: ReturnType<typeof wsClient>, sse: Awaited<ReturnType<typeof sseClient>>): Promise<void> {
  if (g.Deno || g.Bun) return;
  await new Promise((r) => setTimeout(r, 12_000));
  assert.equal(ws.close, undefined, "the WebSocket is still open");
  assert.equal(sse.ended, false, "the SSE stream is still open");
  await createApp(sandboxUrl, "after-quiet");
  await waitFor(() => ws.frames.some((f) => nameOf(f) === "after-quiet") && sse.events.some((e) => nameOf(e.data) === "after-quiet"), "an event after the quiet period on both streams", 20_000);
}
