/**
 * docs/sandbox.md's "Make your own app" recipe, run as written: the request bodies of its curl
 * commands are read from the page and sent to a sandbox that AppK8sClient watches. The create is
 * a createEvent with the app-id's identity, the `/status` PATCH an updateEvent (ACTIVE), the
 * `spec` PATCH nothing (the next event is the delete's).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { AppK8sClient } from "../src/flyte/app-client.ts";
import type { WatchResponse } from "../src/flyte/model.ts";
import { KubeClient } from "../src/kube/client.ts";
import { startSandbox } from "../src/sandbox/mod.ts";
import { within } from "./helpers/service.ts";

const page = readFileSync(new URL("../docs/sandbox.md", import.meta.url), "utf8");
const section = page.slice(page.indexOf("## Make your own app"), page.indexOf("\n## ", page.indexOf("## Make your own app") + 1));

/** The recipe's `curl -X <verb> -H 'Content-Type: …' $K<path> -d '<json>'` commands, in order. */
const requests = [...section.matchAll(/curl -s -X (POST|PATCH) -H 'Content-Type: ([^']+)' \$K(\S*) -d '([^']+)'/g)].map((m) => ({ method: m[1]!, type: m[2]!, path: m[3]!, body: m[4]! }));

test("the recipe's create, /status PATCH and spec PATCH give a createEvent, an updateEvent and no event", async () => {
  assert.equal(requests.length, 3, `three curl commands with a body in the recipe:\n${section}`);
  const base = /^K=(\S+)$/m.exec(section)?.[1];
  assert.equal(base, "http://127.0.0.1:8001/apis/serving.knative.dev/v1/namespaces/flyte/services");
  const sb = await startSandbox();
  const client = new KubeClient({ server: sb.url, namespace: "flyte" });
  const apps = new AppK8sClient({ client, namespace: "flyte" });
  try {
    await apps.startWatching(AbortSignal.timeout(20_000));
    const sub = apps.subscribe("");
    const events = sub[Symbol.asyncIterator]();
    const next = async (what: string): Promise<WatchResponse> => {
      const r = await within(events.next(), what);
      assert.ok(!r.done, `the subscription ended before ${what}`);
      return r.value;
    };
    const send = async (r: { method: string; type: string; path: string; body?: string }) => {
      const res = await fetch(`${sb.url}/apis/serving.knative.dev/v1/namespaces/flyte/services${r.path}`, { method: r.method, headers: r.body ? { "content-type": r.type } : {}, ...(r.body ? { body: r.body } : {}) });
      const text = await res.text();
      assert.ok(res.ok, `${r.method} ${r.path}: ${res.status} ${text}`);
    };
    const [create, status, spec] = requests as [typeof requests[0], typeof requests[0], typeof requests[0]];

    await send(create);
    const created = await next("the createEvent");
    assert.ok("createEvent" in created, JSON.stringify(created));
    assert.deepEqual(created.createEvent.app.metadata?.id, { org: "flyte", project: "demo", domain: "development", name: "hello" });

    await send(status);
    const updated = await next("the updateEvent");
    assert.ok("updateEvent" in updated, JSON.stringify(updated));
    assert.deepEqual(updated.updateEvent.updatedApp.metadata?.id, created.createEvent.app.metadata?.id);
    assert.equal(updated.updateEvent.updatedApp.status?.conditions?.at(-1)?.deploymentStatus, "DEPLOYMENT_STATUS_ACTIVE");

    // The spec change gives no event: the next one is the delete's.
    await send(spec);
    assert.equal((await (await fetch(`${sb.url}/apis/serving.knative.dev/v1/namespaces/flyte/services/hello-demo-development`)).json() as { spec: { template: { spec: { containers: { image: string }[] } } } }).spec.template.spec.containers[0]!.image, "nginx:1.28");
    assert.match(section, /curl -X DELETE\s+\$K\/hello-demo-development/);
    await send({ method: "DELETE", type: "", path: "/hello-demo-development" });
    const deleted = await next("the deleteEvent");
    assert.deepEqual(Object.keys(deleted), ["deleteEvent"], `the spec PATCH gave an event: ${JSON.stringify(deleted)}`);
    sub.close();
  } finally {
    await apps.stopWatching();
    await client.close();
    await sb.close();
  }
});
