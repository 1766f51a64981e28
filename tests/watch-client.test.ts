/**
 * The watch client (`appwatch watch`) against a real appwatch service on
 * loopback: human and JSON lines, resume tokens across server restarts (the
 * same cluster: resumed; another cluster: a fresh snapshot saying why),
 * idle reconnects, and the refusals that end it (401, 400).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../src/cli.ts";
import { runWatchClient, type WatchClientOptions } from "../src/client/watch.ts";
import { KServiceName } from "../src/flyte/naming.ts";
import { createLogger } from "../src/log.ts";
import type { Sandbox } from "../src/sandbox/sandbox.ts";
import { startSandbox, startSandboxCluster } from "../src/sandbox/mod.ts";
import { connectCluster, type RunningService, type ServiceSettings, startService } from "../src/service/server.ts";
import type { KubeObject } from "../src/watch/types.ts";
import { waitFor } from "./helpers/run.ts";
import { testSettings, untilHub } from "./helpers/service.ts";

const TIME = /^\d\d:\d\d:\d\d /;

/** The shared test settings, with a shorter shutdown deadline. */
function settings(overrides: Partial<ServiceSettings> = {}): ServiceSettings {
  return testSettings({ shutdownTimeoutSeconds: 5, ...overrides });
}

/**
 * Starts a service (on a fresh sandbox, or on the cluster `on.kubeconfig` names) and waits for its
 * initial sync.
 */
async function serve(overrides: Partial<ServiceSettings> = {}, on?: { kubeconfig: string }): Promise<RunningService & { logs: string[]; sb: Sandbox | undefined }> {
  const logs: string[] = [];
  const sandbox = on ? undefined : await startSandboxCluster({ demoIntervalMs: 0 });
  const cluster = sandbox ?? await connectCluster({ kubeconfig: on!.kubeconfig, namespaces: ["flyte"] });
  const service = await startService(settings(overrides), { logger: createLogger({ level: "warn", sink: (l) => logs.push(l) }), cluster });
  await service.watching;
  const sb = sandbox?.sandbox; // replica counts are in the snapshot already (the Revision watch is listed first)
  return Object.assign(service, { logs, sb });
}

function ksvc(project: string, domain: string, name: string, org = "acme"): KubeObject {
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    metadata: {
      name: KServiceName({ project, domain, name }),
      namespace: "flyte",
      labels: { "flyte.org/app-managed": "true", "flyte.org/project": project, "flyte.org/domain": domain },
      annotations: { "flyte.org/app-id": `${project}/${domain}/${name}`, "flyte.org/app-org": org },
    },
    spec: { template: { spec: { containers: [{ image: "app:v1" }] } } },
  };
}

function ready(sb: Sandbox, obj: KubeObject): void {
  sb.updateStatus("services", "flyte", obj.metadata!.name!, {
    latestReadyRevisionName: `${obj.metadata!.name}-00001`,
    conditions: [
      { type: "ConfigurationsReady", status: "True", lastTransitionTime: "2026-04-30T12:00:09Z" },
      { type: "Ready", status: "True", lastTransitionTime: "2026-04-30T12:00:10Z" },
      { type: "RoutesReady", status: "True", lastTransitionTime: "2026-04-30T12:00:10Z" },
    ],
  });
}

/** Runs the client in-process, capturing what it prints. */
function client(options: Partial<WatchClientOptions> & { url: string }) {
  const out: string[] = [];
  const err: string[] = [];
  const logs: string[] = [];
  const abort = new AbortController();
  const done = runWatchClient({ snapshot: true, output: "human", verbose: false, ...options }, {
    stdout: (l) => out.push(l),
    stderr: (l) => err.push(l),
    logger: createLogger({ level: "info", sink: (l) => logs.push(l) }),
    signal: abort.signal,
  });
  const dump = () => `\nstdout:\n${out.join("\n")}\nstderr:\n${err.join("\n")}\nlogs:\n${logs.join("\n")}`;
  return {
    out,
    err,
    logs,
    done,
    /** Lines without the time prefix. */
    lines: () => out.map((l) => l.replace(TIME, "")),
    until: (pred: (lines: string[]) => boolean, what: string, ms = 15_000) => waitFor(() => pred(out.map((l) => l.replace(TIME, ""))), `${what}${dump()}`, ms),
    async stop() {
      abort.abort();
      return await done;
    },
  };
}

describe("appwatch watch (against a real service)", () => {
  test("human lines: connect, snapshot, live create/update/delete; heartbeats only with --verbose", async () => {
    const service = await serve({ heartbeatSeconds: 0.1 });
    const sb = service.sb!;
    const quiet = client({ url: service.url });
    const verbose = client({ url: service.url, verbose: true });
    try {
      await quiet.until((l) => l.some((x) => x.startsWith("SYNCED")), "the snapshot");
      assert.ok(quiet.out.every((l) => TIME.test(l)), "every line starts with the time");
      const lines = quiet.lines();
      assert.equal(lines[0], `CONNECTED  ${service.url}  snapshot (6 apps)`);
      assert.equal(lines.filter((l) => l.startsWith("CREATE  ")).length, 6);
      assert.ok(lines.includes("CREATE  flyte/llm/development/gradio-chat  ACTIVE  1 replica  http://gradio-chat-llm-development.localhost:30081"), lines.join("\n"));
      assert.ok(lines.includes("CREATE  demo-org/research/development/jupyter-lab  STOPPED  0 replicas"), lines.join("\n"));
      assert.equal(lines[7], "SYNCED snapshot (6 apps)");

      const obj = sb.create("services", ksvc("proj", "dev", "board"));
      await quiet.until((l) => l.some((x) => x.startsWith("CREATE  acme/proj/dev/board")), "the live create");
      ready(sb, obj);
      await quiet.until((l) => l.includes("UPDATE  acme/proj/dev/board  ACTIVE  0 replicas  http://board-proj-dev.localhost:30081"), "the update to ACTIVE");
      sb.delete("services", "flyte", obj.metadata!.name!);
      await quiet.until((l) => l.some((x) => x.startsWith("DELETE  acme/proj/dev/board  ")), "the delete");
      await verbose.until((l) => l.filter((x) => x === "HEARTBEAT").length >= 2, "heartbeats in verbose output");
      assert.ok(!quiet.lines().includes("HEARTBEAT"), "heartbeats are hidden without --verbose");
      assert.deepEqual(quiet.err, []);
      assert.equal(await quiet.stop(), 0);
      assert.equal(await verbose.stop(), 0);
    } finally {
      await quiet.stop();
      await verbose.stop();
      await service.stop();
    }
  });

  test("--output json: every frame verbatim, one per line (heartbeats too); --resume replays what was missed", async () => {
    const service = await serve({ heartbeatSeconds: 0.1 });
    const sb = service.sb!;
    const a = client({ url: service.url, output: "json", project: "llm", domain: "development" });
    try {
      await a.until((l) => l.some((x) => x.includes('"heartbeat"')), "a heartbeat");
      const frames = a.out.map((l) => JSON.parse(l));
      assert.deepEqual(a.out, frames.map((f) => JSON.stringify(f)), "lines are the frames' JSON");
      assert.deepEqual(frames[0], { start: { mode: "snapshot", apps: 1 } });
      assert.equal(frames[1].createEvent.app.metadata.id.name, "gradio-chat");
      assert.equal(frames[2].synced.after, "snapshot");
      const token: string = frames.findLast((f) => f.heartbeat?.resume)!.heartbeat.resume;
      assert.match(a.logs.join("\n"), /"msg":"connected".*"mode":"snapshot"/, "connection notes go to the log (stderr), not stdout");
      assert.equal(await a.stop(), 0);

      // Missed while away: one change in the subscribed project, one outside it.
      const created = service.apps.metrics.events.create;
      sb.create("services", ksvc("llm", "development", "missed", "flyte"));
      sb.create("services", ksvc("other", "development", "elsewhere"));
      // Both changes must be in the service's journal before the client comes back: else the
      // resume replays nothing and the create arrives live, after the synced marker.
      await untilHub(service.apps, () => service.apps.metrics.events.create >= created + 2, "the service to see both creates");
      assert.equal(service.apps.metrics.events.create, created + 2, "the service saw both creates");
      const b = client({ url: service.url, resume: token, project: "llm", domain: "development" });
      try {
        await b.until((l) => l.some((x) => x.startsWith("SYNCED")), "the replay");
        assert.deepEqual(b.lines().slice(0, 3), [
          `CONNECTED  ${service.url}  resumed (1 replayed)`,
          "CREATE  flyte/llm/development/missed  UNSPECIFIED  0 replicas  http://missed-llm-development.localhost:30081",
          "SYNCED resume (1 replayed)",
        ]);
      } finally {
        await b.stop();
      }
    } finally {
      await a.stop();
      await service.stop();
    }
  });

  test("reconnects after the server closes with 1001: resumes on the same cluster, re-snapshots (resumeFailed) on a new one", async () => {
    const ext = await startSandbox({ bookmarkIntervalMs: 0 });
    const dir = await mkdtemp(join(tmpdir(), "appwatch-watch-"));
    const kubeconfig = join(dir, "config");
    await writeFile(kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: sb, cluster: {server: "${ext.url}"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: sb, user: u, namespace: flyte}}]
current-context: c
`);
    ext.sandbox.create("services", ksvc("proj", "dev", "one"));
    const onCluster = { kubeconfig };
    let service = await serve({}, onCluster);
    const port = service.port;
    const c = client({ url: service.url });
    try {
      await c.until((l) => l.includes("SYNCED snapshot (1 app)"), "the first snapshot");
      assert.deepEqual(c.lines(), [`CONNECTED  ${service.url}  snapshot (1 app)`, "CREATE  acme/proj/dev/one  UNSPECIFIED  0 replicas  http://one-proj-dev.localhost:30081", "SYNCED snapshot (1 app)"]);
      ext.sandbox.create("services", ksvc("proj", "dev", "two"));
      await c.until((l) => l.some((x) => x.startsWith("CREATE  acme/proj/dev/two")), "a live event");

      // 1. The server stops (close 1001) and comes back on the same cluster: the stream resumes.
      await service.stop();
      await c.until((l) => l.some((x) => x.startsWith("DISCONNECTED  server shutting down (1001); reconnecting in 0.5 s")), "the disconnect line");
      service = await serve({ port }, onCluster);
      await c.until((l) => l.some((x) => x.startsWith("RECONNECTED")), "the reconnect");
      await c.until((l) => l.includes("SYNCED resume (0 replayed)"), "the end of the replay");
      assert.ok(c.lines().includes(`RECONNECTED  ${service.url}  resumed (0 replayed)`), c.lines().join("\n"));
      ext.sandbox.create("services", ksvc("proj", "dev", "three"));
      await c.until((l) => l.some((x) => x.startsWith("CREATE  acme/proj/dev/three")), "a live event after resuming");
      assert.equal(c.lines().filter((l) => l.startsWith("CREATE  acme/proj/dev/one")).length, 1, "no snapshot again after resuming");

      // 2. It comes back on another cluster (a fresh sandbox): the token means nothing there.
      await service.stop();
      await c.until((l) => l.filter((x) => x.startsWith("DISCONNECTED  server shutting down (1001)")).length === 2, "the second disconnect");
      service = await serve({ port });
      await c.until((l) => l.includes("SYNCED snapshot (6 apps)"), "the fresh snapshot");
      assert.ok(c.lines().includes(`RECONNECTED  ${service.url}  fresh snapshot (6 apps; resume failed: too-old)`), c.lines().join("\n"));
      assert.deepEqual(c.err, []);
      assert.equal(await c.stop(), 0);
    } finally {
      await c.stop();
      await service.stop();
      await ext.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("a silent connection is dropped after --idle-timeout and resumed", async () => {
    const service = await serve({ heartbeatSeconds: 60 });
    const c = client({ url: service.url, idleTimeoutMs: 300, output: "json" });
    try {
      await c.until(() => c.logs.some((l) => l.includes('"msg":"reconnected"')), "an idle reconnect");
      assert.match(c.logs.join("\n"), /"msg":"disconnected".*"reason":"no frame for 0.3 s"/);
      assert.match(c.logs.join("\n"), /"msg":"reconnected".*"mode":"resumed"/);
      assert.deepEqual(JSON.parse(c.out.findLast((l) => l.includes('"start"'))!), { start: { mode: "resumed", replayed: 0 } });
    } finally {
      await c.stop();
      await service.stop();
    }
  });

  test("--cluster: a service of that cluster streams; one of another cluster refuses, and the client stops with its reason", async () => {
    const east = await serve({ clusterName: "east" });
    try {
      const ok = client({ url: east.url, cluster: "east" });
      await ok.until((lines) => lines.some((l) => l.includes("SYNCED")), "the snapshot from cluster east");
      assert.equal(await ok.stop(), 0);
      const other = client({ url: east.url, cluster: "west" });
      assert.equal(await other.done, 1);
      assert.deepEqual(other.err, ['appwatch watch: the server refused the stream: HTTP 404 not_found: no cluster "west" here: this appwatch serves cluster "east"']);
    } finally {
      await east.stop();
    }
  });

  test("refusals end it with exit 1 and the server's message: 401 (no or wrong token), 400 (bad query); the right token connects", async () => {
    const secret = "watch-client-secret-token";
    const service = await serve({ authTokens: [secret] });
    try {
      const none = client({ url: service.url });
      assert.equal(await none.done, 1);
      assert.deepEqual(none.err, ["appwatch watch: the server refused the stream: HTTP 401 unauthenticated: a bearer token is required"]);

      const wrong = client({ url: service.url, token: "not-the-token" });
      assert.equal(await wrong.done, 1);
      assert.match(wrong.err.join("\n"), /HTTP 401 unauthenticated: the bearer token is not valid/);
      assert.ok(!wrong.err.join("\n").includes("not-the-token"), "the token is never printed");

      const bad = client({ url: service.url, token: secret, org: "no spaces allowed" });
      assert.equal(await bad.done, 1);
      assert.match(bad.err.join("\n"), /HTTP 400 invalid_argument: org: must be letters/);

      // --cluster names another cluster than the service's (unnamed here): final, with the reason.
      const other = client({ url: service.url, token: secret, cluster: "west" });
      assert.equal(await other.done, 1);
      assert.deepEqual(other.err, ["appwatch watch: the server refused the stream: HTTP 404 not_found: no cluster \"west\" here: this appwatch's cluster has no name (start it with --cluster-name)"]);

      // Through the command line, with the token from APPWATCH_TOKEN.
      const out: string[] = [];
      const err: string[] = [];
      const abort = new AbortController();
      const done = runCli(["watch", "--url", service.url, "--app", "gradio-chat", "--project", "llm", "--domain", "development"], {
        stdout: (l) => out.push(l),
        stderr: (l) => err.push(l),
        signal: abort.signal,
        env: { APPWATCH_TOKEN: secret },
      });
      await waitFor(() => out.some((l) => l.includes("SYNCED")), `the snapshot\n${out.join("\n")}\n${err.join("\n")}`);
      assert.match(out[0]!, /CONNECTED {2}http:\/\/127\.0\.0\.1:\d+ {2}snapshot \(1 app\)$/);
      assert.ok(![...out, ...err].join("\n").includes(secret), "the token is never printed");
      abort.abort();
      assert.equal(await done, 0);
    } finally {
      await service.stop();
    }
  });
});
