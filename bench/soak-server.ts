/**
 * The soak benchmark's API server (B5): the appwatch sandbox (a real
 * `Sandbox`, served like `startSandbox` does) in its own Node process, seeded
 * with demo apps, plus control routes for the soak driver:
 *
 * - `POST /ctl/change`: one status change of an app (the watch delivers it);
 *   answers `{rv}`;
 * - `POST /ctl/expire`: a write the app watch does not see (a Revision), then
 *   `compact()` and `closeWatches()`: the client's re-watch from its last RV
 *   finds it compacted (410 Expired) and must relist;
 * - `POST /ctl/activity?intervalMs=N` / `POST /ctl/activity/stop`: the demo
 *   activity (creates, deletes, rollouts, stops/starts, failures, scaling) at
 *   one change every N ms;
 * - `GET /ctl/stats`: `{rv, activeWatches, services, steps, requests}`.
 *
 * The request log the sandbox keeps for tests is cleared on every control call
 * (it would grow without bound). Start: `node --import tsx bench/soak-server.ts
 * --apps 50`; prints one JSON line when listening; exits when stdin closes.
 * @module
 */
import process from "node:process";
import { seedDemo, startDemoActivity, type DemoActivity } from "../src/sandbox/demo.ts";
import { Sandbox } from "../src/sandbox/sandbox.ts";
import { serveFetch } from "../src/serve.ts";

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
        services: sandbox.list("services", NS).length,
        steps: activity?.steps ?? 0,
        requests,
      });
  }
  return json({ error: "unknown control route" }, 404);
}

const server = await serveFetch((req) => {
  const url = new URL(req.url);
  if (url.pathname.startsWith("/ctl/")) return control(url, req.method);
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
