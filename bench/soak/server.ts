/**
 * The soak benchmark's API server (B5): the appwatch sandbox (a real
 * `Sandbox`, served like `startSandbox` does) in its own Node process, seeded
 * with demo apps, plus control routes for the soak driver:
 *
 * - `POST /ctl/change`: one status change of an app (the watch delivers it), and
 *   Revision churn for the client's Revision watch: the app's serving Revision
 *   scales (`actualReplicas` 1 ↔ 2), a new Revision `soak-rev-<n>` is created and
 *   the previous one deleted (so the Revision count stays constant); answers `{rv}`;
 * - `POST /ctl/expire`: a write the app watch does not see (a Revision), then
 *   `compact()` and `closeWatches()`: the client's re-watch from its last RV
 *   finds it compacted (410 Expired) and must relist;
 * - `POST /ctl/activity?intervalMs=N` / `POST /ctl/activity/stop`: the demo
 *   activity (creates, deletes, rollouts, stops/starts, failures, scaling) at
 *   one change every N ms;
 * - `GET /ctl/stats`: `{rv, activeWatches, revisionWatches, services, revisions, steps, requests}`
 *   (`revisionWatches`: open watch responses on revisions, counted here as their bodies end).
 *
 * The request log the sandbox keeps for tests is cleared on every control call
 * (it would grow without bound). Start: `node --import tsx bench/soak/server.ts
 * --apps 50`; prints one JSON line when listening; exits when stdin closes.
 * @module
 */
import process from "node:process";
import { seedDemo, startDemoActivity, type DemoActivity } from "../../src/sandbox/demo.ts";
import { Sandbox } from "../../src/sandbox/sandbox.ts";
import { serveFetch } from "../../src/serve.ts";

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const apps = Number(argValue("--apps") ?? 50);
const NS = "flyte";
// No periodic bookmarks: they would move the client's resume RV past the compaction point.
const sandbox = new Sandbox({ historyLimit: 1000, bookmarkIntervalMs: 0 });
const seeded = seedDemo(sandbox, { count: apps, namespace: NS });
let activity: DemoActivity | undefined;
let requests = 0;
let changeNo = 0;
let revisionWatches = 0;
let churn = 0;

/** The response with its body wrapped so that `onEnd` runs once when the body ends or is cancelled. */
function tracked(res: Response, onEnd: () => void): Response {
  if (!res.body) {
    onEnd();
    return res;
  }
  const reader = res.body.getReader();
  let ended = false;
  const end = () => {
    if (!ended) (ended = true), onEnd();
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const r = await reader.read();
        if (r.done) {
          end();
          controller.close();
        } else controller.enqueue(r.value);
      } catch (e) {
        end();
        controller.error(e);
      }
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

function control(url: URL, method: string): Response {
  requests += sandbox.requests.length;
  sandbox.requests.length = 0;
  switch (`${method} ${url.pathname}`) {
    case "POST /ctl/change": {
      const services = sandbox.list("services", NS);
      const svc = services[changeNo++ % services.length]!;
      const status = structuredClone(svc.status ?? {}) as { soakTick?: number };
      // A field the conversion ignores would be "unchanged" for the app layer; the watch still delivers it.
      status.soakTick = changeNo;
      const updated = sandbox.updateStatus("services", NS, svc.metadata.name!, status);
      // Revision churn: scale the app's serving Revision, create a Revision, delete the previous one.
      const ready = (svc.status as { latestReadyRevisionName?: string } | undefined)?.latestReadyRevisionName;
      const serving = ready ? sandbox.get("revisions", NS, ready) : undefined;
      if (serving) {
        const st = serving.status as { actualReplicas?: number } | undefined;
        sandbox.updateStatus("revisions", NS, ready!, { ...st, actualReplicas: st?.actualReplicas === 2 ? 1 : 2 });
      }
      churn++;
      const rev = sandbox.create("revisions", {
        apiVersion: "serving.knative.dev/v1",
        kind: "Revision",
        metadata: { name: `soak-rev-${churn}`, namespace: NS, labels: { "serving.knative.dev/service": svc.metadata.name! } },
        spec: { containers: [{ image: "ghcr.io/example/soak:1" }] },
      });
      sandbox.updateStatus("revisions", NS, rev.metadata.name!, { actualReplicas: churn % 3, observedGeneration: 1 });
      if (churn > 1 && sandbox.get("revisions", NS, `soak-rev-${churn - 1}`)) sandbox.delete("revisions", NS, `soak-rev-${churn - 1}`);
      return json({ rv: updated.metadata.resourceVersion });
    }
    case "POST /ctl/expire": {
      const revs = sandbox.list("revisions", NS);
      const rev = revs[changeNo++ % revs.length]!;
      sandbox.updateStatus("revisions", NS, rev.metadata.name!, { ...(rev.status as object), soakTick: changeNo });
      sandbox.compact();
      sandbox.closeWatches();
      return json({ rv: sandbox.resourceVersion });
    }
    case "POST /ctl/activity": {
      activity?.stop();
      activity = startDemoActivity(sandbox, { intervalMs: Number(url.searchParams.get("intervalMs") ?? 5), namespace: NS, seed: 7 });
      return json({ ok: true });
    }
    case "POST /ctl/activity/stop": {
      activity?.stop();
      return json({ steps: activity?.steps ?? 0 });
    }
    case "GET /ctl/stats":
      return json({
        rv: sandbox.resourceVersion,
        activeWatches: sandbox.activeWatches(),
        revisionWatches,
        services: sandbox.list("services", NS).length,
        revisions: sandbox.list("revisions", NS).length,
        steps: activity?.steps ?? 0,
        requests,
      });
  }
  return json({ error: "unknown control route" }, 404);
}

const server = await serveFetch((req) => {
  const url = new URL(req.url);
  if (url.pathname.startsWith("/ctl/")) return control(url, req.method);
  const watch = url.searchParams.get("watch");
  if (url.pathname.endsWith("/revisions") && (watch === "1" || watch === "true")) {
    return Promise.resolve(sandbox.app.fetch(req)).then((res) => {
      if (!res.ok) return res;
      revisionWatches++;
      return tracked(res, () => revisionWatches--);
    });
  }
  return sandbox.app.fetch(req);
}, { port: 0, hostname: "127.0.0.1" });

async function shutdown(): Promise<void> {
  activity?.stop();
  sandbox.dispose();
  await server.close();
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown());
process.on("SIGINT", () => void shutdown());
process.stdin.on("end", () => void shutdown());
process.stdin.on("close", () => void shutdown());
process.stdin.resume();

process.stdout.write(JSON.stringify({ url: server.url, apps: seeded.length, namespace: NS, pid: process.pid }) + "\n");
