/**
 * End to end through the real entry process (`src/main.ts serve`) on the
 * runtime running this suite: the service starts on its built-in sandbox, a
 * real WebSocket client and a real SSE client watch while the test drives the
 * sandbox's Kubernetes API over HTTP, and SIGTERM shuts it down (clients get
 * close 1001, the process exits 0).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import { KServiceName } from "../src/flyte/naming.ts";
import { waitFor } from "./helpers/run.ts";
import { runtimeCommand } from "./helpers/runtime-command.ts";
import { Wakes } from "./helpers/wakes.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const WS: typeof WebSocket = g.WebSocket ?? (await import("ws")).default;

const entryCommand = (args: string[]) => runtimeCommand("src/main.ts", args);

interface Proc {
  child: ChildProcess;
  logs: Record<string, unknown>[];
  exit: Promise<{ code: number | null; signal: string | null }>;
  /** Resolves once `holds()`, checked now, on each log line and at exit; fails after `timeoutMs` (against hangs). */
  until(holds: () => boolean, what: string, timeoutMs: number): Promise<void>;
}

function startEntry(args: string[]): Proc {
  const [cmd, argv] = entryCommand(args);
  const child = spawn(cmd, argv, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
  const logs: Record<string, unknown>[] = [];
  const wakes = new Wakes(() => `; logs: ${JSON.stringify(logs)}`);
  const wake = () => wakes.wake();
  let buf = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    buf += chunk;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        logs.push(JSON.parse(line));
      } catch {
        logs.push({ raw: line });
      }
    }
    wake();
  });
  child.stdout!.resume();
  const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on("exit", (code, signal) => (resolve({ code, signal }), wake())));
  const until = (holds: () => boolean, what: string, timeoutMs: number) => wakes.until(holds, what, timeoutMs);
  return { child, logs, exit, until };
}

const NS = "flyte";
const KSVC = `/apis/serving.knative.dev/v1/namespaces/${NS}/services`;

function ksvc(project: string, domain: string, name: string): Record<string, unknown> {
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    metadata: {
      name: KServiceName({ project, domain, name }),
      namespace: NS,
      labels: { "flyte.org/app-managed": "true", "flyte.org/project": project, "flyte.org/domain": domain, "flyte.org/app-name": name },
      annotations: { "flyte.org/app-id": `${project}/${domain}/${name}` },
    },
    spec: { template: { spec: { containers: [{ image: "ghcr.io/acme/e2e:v1" }] } } },
  };
}

type Frame = Record<string, unknown> & { resume?: string };
const kindOf = (f: Frame) => Object.keys(f).find((k) => k !== "resume")!;
const nameOf = (f: Frame): string | undefined => {
  const body = (f.createEvent ?? f.updateEvent ?? f.deleteEvent) as { app?: { metadata?: { id?: { name?: string } } }; updatedApp?: { metadata?: { id?: { name?: string } } } } | undefined;
  return (body?.app ?? body?.updatedApp)?.metadata?.id?.name;
};
const phaseOf = (f: Frame): string | undefined => {
  const body = (f.createEvent ?? f.updateEvent) as { app?: { status?: { conditions?: { deploymentStatus?: string }[] } }; updatedApp?: { status?: { conditions?: { deploymentStatus?: string }[] } } } | undefined;
  return (body?.app ?? body?.updatedApp)?.status?.conditions?.at(-1)?.deploymentStatus;
};

describe("the entry process (serve on the sandbox)", () => {
  let proc: Proc;
  let url = "";
  let sandbox = "";

  before(async () => {
    proc = startEntry(["serve", "--sandbox", "--port", "0", "--host", "127.0.0.1", "--demo-interval-ms", "0", "--heartbeat-seconds", "1"]);
    await proc.until(() => proc.logs.some((l) => l.msg === "appwatch listening") || proc.child.exitCode !== null, "the service to listen", 60_000);
    const listening = proc.logs.find((l) => l.msg === "appwatch listening");
    assert.ok(listening, `service did not start: ${JSON.stringify(proc.logs)}`);
    url = String(listening.url);
    sandbox = String(proc.logs.find((l) => String(l.msg).startsWith("SANDBOX MODE"))?.sandbox);
    assert.match(sandbox, /^http:\/\/127\.0\.0\.1:\d+$/);
    // The service logs this once the initial sync is done, the moment /readyz turns 200: wait for the line, then ask once.
    await proc.until(() => proc.logs.some((l) => l.msg === "initial sync done; ready") || proc.child.exitCode !== null, "the initial sync", 30_000);
    const ready = await fetch(`${url}/readyz`);
    assert.equal(ready.status, 200, `readyz after the initial sync: ${await ready.text()}`);
  });

  after(async () => {
    if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill("SIGKILL");
    await proc.exit;
  });

  test("WebSocket and SSE clients get the snapshot, then create/update/delete as the cluster changes; SIGTERM ends it with 1001 and exit 0", async () => {
    // A WebSocket for one project, an SSE stream for everything.
    const ws = new WS(`${url.replace(/^http/, "ws")}/v1/watch?project=e2e&domain=development`);
    const wsFrames: Frame[] = [];
    let wsClose: { code: number; reason: string } | undefined;
    ws.onmessage = (e: MessageEvent) => wsFrames.push(JSON.parse(String(e.data)));
    ws.onclose = (e: CloseEvent) => (wsClose = { code: e.code, reason: e.reason });

    const sse = await fetch(`${url}/v1/watch`, { headers: { accept: "text/event-stream" } });
    assert.equal(sse.status, 200);
    assert.match(sse.headers.get("content-type") ?? "", /^text\/event-stream/);
    const sseEvents: { event: string; id?: string; data: Frame }[] = [];
    let sseEnded = false;
    void (async () => {
      const reader = sse.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const fields: Record<string, string> = {};
          for (const line of block.split("\n")) {
            const c = line.indexOf(": ");
            if (c > 0) fields[line.slice(0, c)] = line.slice(c + 2);
          }
          if (fields.event && fields.data) sseEvents.push({ event: fields.event, ...(fields.id ? { id: fields.id } : {}), data: JSON.parse(fields.data) });
        }
      }
      sseEnded = true;
    })();

    await waitFor(() => wsFrames.some((f) => kindOf(f) === "synced") && sseEvents.some((e) => e.event === "synced"), "both snapshots", 20_000);
    // The e2e project is empty: the WebSocket snapshot has no apps; SSE has the demo apps.
    assert.deepEqual(wsFrames.map(kindOf), ["start", "synced"]);
    assert.deepEqual(wsFrames[0], { start: { mode: "snapshot", apps: 0, sandbox: true } });
    const demoApps = sseEvents.filter((e) => e.event === "createEvent").length;
    assert.ok(demoApps >= 1, "the sandbox's demo apps are in the SSE snapshot");
    assert.deepEqual(sseEvents[0]!.data, { start: { mode: "snapshot", apps: demoApps, sandbox: true } });

    // Drive the cluster over the sandbox's Kubernetes API.
    const post = await fetch(`${sandbox}${KSVC}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ksvc("e2e", "development", "hello")) });
    assert.equal(post.status, 201);
    const name = KServiceName({ project: "e2e", domain: "development", name: "hello" });
    const ready = {
      status: {
        latestCreatedRevisionName: `${name}-00001`,
        latestReadyRevisionName: `${name}-00001`,
        conditions: [
          { type: "ConfigurationsReady", status: "True", lastTransitionTime: "2026-11-30T08:00:00Z" },
          { type: "Ready", status: "True", lastTransitionTime: "2026-11-30T08:00:01Z" },
          { type: "RoutesReady", status: "True", lastTransitionTime: "2026-11-30T08:00:01Z" },
        ],
      },
    };
    const patched = await fetch(`${sandbox}${KSVC}/${name}/status`, { method: "PATCH", headers: { "content-type": "application/merge-patch+json" }, body: JSON.stringify(ready) });
    assert.equal(patched.status, 200);
    // A label change that leaves the App as it was: no event.
    const relabel = await fetch(`${sandbox}${KSVC}/${name}`, { method: "PATCH", headers: { "content-type": "application/merge-patch+json" }, body: JSON.stringify({ metadata: { labels: { team: "x" } } }) });
    assert.equal(relabel.status, 200);
    assert.equal((await fetch(`${sandbox}${KSVC}/${name}`, { method: "DELETE" })).status, 200);

    await waitFor(() => wsFrames.some((f) => kindOf(f) === "deleteEvent"), "the delete on the WebSocket", 20_000);
    await waitFor(() => sseEvents.some((e) => e.event === "deleteEvent"), "the delete on SSE", 20_000);
    const live = wsFrames.slice(2).filter((f) => kindOf(f) !== "heartbeat");
    assert.deepEqual(live.map((f) => `${kindOf(f)} ${nameOf(f)}`), ["createEvent hello", "updateEvent hello", "deleteEvent hello"]);
    assert.equal(phaseOf(live[1]!), "DEPLOYMENT_STATUS_ACTIVE");
    for (const f of live) assert.match(String(f.resume), /^[A-Za-z0-9_-]+$/, "every live event carries a resume token");
    // SSE saw the same events with the same JSON, and its ids are the frames' tokens.
    const sseLive = sseEvents.filter((e) => ["createEvent", "updateEvent", "deleteEvent"].includes(e.event) && nameOf(e.data) === "hello");
    assert.deepEqual(sseLive.map((e) => e.data), live);
    for (const e of sseLive) assert.equal(e.id, e.data.resume);
    await waitFor(() => wsFrames.some((f) => kindOf(f) === "heartbeat"), "a heartbeat", 10_000);

    // Graceful shutdown.
    proc.child.kill("SIGTERM");
    await waitFor(() => wsClose !== undefined && sseEnded, "clients to be closed", 15_000);
    assert.equal(wsClose!.code, 1001);
    const { code, signal } = await proc.exit;
    // Deno's node:child_process reports a child that handled SIGTERM as (null, "SIGTERM") even when it
    // exited 0; the "stopped" log line proves the orderly path there.
    if (!g.Deno) assert.equal(code, 0, `exit ${code} ${signal}`);
    assert.ok(proc.logs.some((l) => l.msg === "stopped"), "the service logged its orderly stop");
    await assert.rejects(fetch(`${url}/healthz`), "the port no longer accepts");
  });
});
