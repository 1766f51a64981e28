// Sandbox API server: objects, status subresource, merge patch, auth, discovery, errors.
// Every test runs a real sandbox over HTTP on loopback and talks to it with plain fetch.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { KubeApiError } from "../src/kube/status.ts";
import { call, withSandbox } from "../src/sandbox/testing.ts";

const svc = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: "serving.knative.dev/v1",
  kind: "Service",
  metadata: { name, labels: { app: name } },
  spec: { template: { spec: { containers: [{ image: `example/${name}:1` }] } } },
  ...extra,
});

describe("sandbox objects over HTTP", () => {
  test("POST creates with server-set metadata; status is dropped; duplicates get 409 AlreadyExists", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      const col = `${api}/namespaces/default/services`;
      assert.equal(sandbox.resourceVersion, "1");
      const r = await call(col, { method: "POST", body: svc("hello", { status: { url: "ignored" } }) });
      assert.equal(r.status, 201);
      assert.equal(r.body.apiVersion, "serving.knative.dev/v1");
      assert.equal(r.body.kind, "Service");
      assert.equal(r.body.metadata.name, "hello");
      assert.equal(r.body.metadata.namespace, "default");
      assert.equal(r.body.metadata.generation, 1);
      assert.equal(r.body.metadata.resourceVersion, "2");
      assert.match(r.body.metadata.uid, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.match(r.body.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(r.body.status, undefined);
      assert.equal(sandbox.resourceVersion, "2");

      const dup = await call(col, { method: "POST", body: svc("hello") });
      assert.equal(dup.status, 409);
      assert.deepEqual(dup.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: 'services.serving.knative.dev "hello" already exists',
        reason: "AlreadyExists",
        details: { name: "hello", group: "serving.knative.dev", kind: "services" },
        code: 409,
      });
      assert.equal(sandbox.resourceVersion, "2");

      const got = await call(`${col}/hello`);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, r.body);
    });
  });

  test("POST validation: missing name 422, bad name 422, namespace mismatch 400, resourceVersion set 500, bad JSON 400", async () => {
    await withSandbox({}, async ({ api }) => {
      const col = `${api}/namespaces/default/services`;
      const noName = await call(col, { method: "POST", body: { metadata: {} } });
      assert.equal(noName.status, 422);
      assert.equal(noName.body.reason, "Invalid");
      assert.equal(noName.body.message, 'Service.serving.knative.dev "" is invalid: metadata.name: Required value: name or generateName is required');
      const bad = await call(col, { method: "POST", body: { metadata: { name: "Bad_Name" } } });
      assert.equal(bad.status, 422);
      assert.equal(bad.body.details.causes[0].field, "metadata.name");
      const ns = await call(col, { method: "POST", body: { metadata: { name: "x", namespace: "other" } } });
      assert.equal(ns.status, 400);
      assert.equal(ns.body.message, "the namespace of the provided object does not match the namespace sent on the request");
      const rv = await call(col, { method: "POST", body: { metadata: { name: "x", resourceVersion: "5" } } });
      assert.equal(rv.status, 500);
      assert.equal(rv.body.message, "Internal error occurred: resourceVersion should not be set on objects to be created");
      const res = await fetch(col, { method: "POST", body: "{not json", headers: { "content-type": "application/json" } });
      assert.equal(res.status, 400);
      assert.equal((await res.json()).reason, "BadRequest");
      const gen = await call(col, { method: "POST", body: { metadata: { generateName: "app-" } } });
      assert.equal(gen.status, 201);
      assert.match(gen.body.metadata.name, /^app-[a-z0-9]{5}$/);
    });
  });

  test("PUT: 422 without resourceVersion, 409 on a stale one, generation bumps only on spec changes, no-op keeps the RV", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      const url = `${api}/namespaces/default/services/hello`;
      const created = sandbox.create("services", { ...svc("hello"), metadata: { name: "hello", namespace: "default" } });
      sandbox.updateStatus("services", "default", "hello", { observedGeneration: 1 });
      const current = sandbox.get("services", "default", "hello")!;
      assert.equal(current.metadata.resourceVersion, "3");

      const noRV = await call(url, { method: "PUT", body: { ...svc("hello"), metadata: { name: "hello" } } });
      assert.equal(noRV.status, 422);
      assert.equal(noRV.body.message, 'Service.serving.knative.dev "hello" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update');

      const stale = await call(url, { method: "PUT", body: { ...created, spec: { changed: true } } });
      assert.equal(stale.status, 409);
      assert.equal(stale.body.reason, "Conflict");
      assert.equal(
        stale.body.message,
        'Operation cannot be fulfilled on services.serving.knative.dev "hello": the object has been modified; please apply your changes to the latest version and try again',
      );

      // Labels only: new RV, same generation; status in the body is ignored.
      const labels = await call(url, {
        method: "PUT",
        body: { ...current, metadata: { ...current.metadata, labels: { app: "hello", tier: "web" } }, status: { observedGeneration: 99 } },
      });
      assert.equal(labels.status, 200);
      assert.equal(labels.body.metadata.resourceVersion, "4");
      assert.equal(labels.body.metadata.generation, 1);
      assert.deepEqual(labels.body.status, { observedGeneration: 1 });

      // Spec change: generation 2; uid and creationTimestamp are kept.
      const spec = await call(url, { method: "PUT", body: { ...labels.body, spec: { template: { spec: { containers: [{ image: "v2" }] } } } } });
      assert.equal(spec.status, 200);
      assert.equal(spec.body.metadata.generation, 2);
      assert.equal(spec.body.metadata.resourceVersion, "5");
      assert.equal(spec.body.metadata.uid, created.metadata.uid);
      assert.equal(spec.body.metadata.creationTimestamp, created.metadata.creationTimestamp);

      // Writing the same object again is a no-op: no new RV.
      const noop = await call(url, { method: "PUT", body: spec.body });
      assert.equal(noop.status, 200);
      assert.equal(noop.body.metadata.resourceVersion, "5");
      assert.equal(sandbox.resourceVersion, "5");

      const missing = await call(`${api}/namespaces/default/services/nope`, { method: "PUT", body: { metadata: { name: "nope", resourceVersion: "1" } } });
      assert.equal(missing.status, 404);
      const renamed = await call(url, { method: "PUT", body: { ...spec.body, metadata: { ...spec.body.metadata, name: "other" } } });
      assert.equal(renamed.status, 400);
      assert.equal(renamed.body.message, "the name of the object (other) does not match the name on the URL (hello)");
    });
  });

  test("PATCH merge-patch: spec bumps generation, null deletes, status ignored, stale RV 409, other content types 415", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      const url = `${api}/namespaces/default/services/hello`;
      sandbox.create("services", { metadata: { name: "hello", namespace: "default", labels: { a: "1", b: "2" } }, spec: { x: 1, y: 1 } });
      const patch = (body: unknown, type = "application/merge-patch+json") =>
        call(url, { method: "PATCH", body, headers: { "content-type": type } });

      const r1 = await patch({ metadata: { labels: { a: null, c: "3" } }, spec: { y: null, z: 2 }, status: { bad: true } });
      assert.equal(r1.status, 200);
      assert.deepEqual(r1.body.metadata.labels, { b: "2", c: "3" });
      assert.deepEqual(r1.body.spec, { x: 1, z: 2 });
      assert.equal(r1.body.status, undefined);
      assert.equal(r1.body.metadata.generation, 2);
      assert.equal(r1.body.metadata.resourceVersion, "3");

      const r2 = await patch({ metadata: { annotations: { note: "hi" } } });
      assert.equal(r2.body.metadata.generation, 2);
      assert.equal(r2.body.metadata.resourceVersion, "4");

      const stale = await patch({ metadata: { resourceVersion: "2", labels: { d: "4" } } });
      assert.equal(stale.status, 409);
      const ok = await patch({ metadata: { resourceVersion: "4", labels: { d: "4" } } });
      assert.equal(ok.status, 200);
      assert.equal(ok.body.metadata.labels.d, "4");

      const strategic = await patch({ spec: {} }, "application/strategic-merge-patch+json");
      assert.equal(strategic.status, 415);
      assert.equal(strategic.body.reason, "UnsupportedMediaType");
      const missing = await call(`${api}/namespaces/default/services/none`, {
        method: "PATCH",
        body: {},
        headers: { "content-type": "application/merge-patch+json" },
      });
      assert.equal(missing.status, 404);
    });
  });

  test("status subresource: only status changes, no generation bump, GET/PUT/PATCH /status", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      const url = `${api}/namespaces/default/services/hello/status`;
      sandbox.create("services", { metadata: { name: "hello", namespace: "default", labels: { a: "1" } }, spec: { x: 1 } });
      const cur = sandbox.get("services", "default", "hello")!;
      const put = await call(url, {
        method: "PUT",
        body: { ...cur, metadata: { ...cur.metadata, labels: { changed: "yes" } }, spec: { x: 2 }, status: { url: "http://hello" } },
      });
      assert.equal(put.status, 200);
      assert.deepEqual(put.body.status, { url: "http://hello" });
      assert.deepEqual(put.body.spec, { x: 1 });
      assert.deepEqual(put.body.metadata.labels, { a: "1" });
      assert.equal(put.body.metadata.generation, 1);
      assert.equal(put.body.metadata.resourceVersion, "3");

      const patched = await call(url, {
        method: "PATCH",
        body: { status: { observedGeneration: 1 }, spec: { x: 3 } },
        headers: { "content-type": "application/merge-patch+json" },
      });
      assert.equal(patched.status, 200);
      assert.deepEqual(patched.body.status, { observedGeneration: 1, url: "http://hello" });
      assert.deepEqual(patched.body.spec, { x: 1 });
      assert.equal(patched.body.metadata.generation, 1);

      const got = await call(url);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, patched.body);
      const stale = await call(url, { method: "PUT", body: { ...cur, status: {} } });
      assert.equal(stale.status, 409);
      const sub = await call(`${api}/namespaces/default/services/hello/scale`);
      assert.equal(sub.status, 404);
    });
  });

  test("DELETE returns the last state stamped with the delete RV; then 404; preconditions give 409", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      const col = `${api}/namespaces/default/services`;
      const a = sandbox.create("services", { metadata: { name: "a", namespace: "default" } });
      sandbox.create("services", { metadata: { name: "b", namespace: "default" } });
      const pre = await call(`${col}/b`, { method: "DELETE", body: { preconditions: { uid: "not-the-uid" } } });
      assert.equal(pre.status, 409);
      const del = await call(`${col}/a`, { method: "DELETE" });
      assert.equal(del.status, 200);
      assert.equal(del.body.metadata.name, "a");
      assert.equal(del.body.metadata.uid, a.metadata.uid);
      assert.equal(del.body.metadata.resourceVersion, "4");
      assert.equal(sandbox.resourceVersion, "4");
      const gone = await call(`${col}/a`);
      assert.equal(gone.status, 404);
      assert.deepEqual(gone.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: 'services.serving.knative.dev "a" not found',
        reason: "NotFound",
        details: { name: "a", group: "serving.knative.dev", kind: "services" },
        code: 404,
      });
      assert.equal((await call(`${col}/a`, { method: "DELETE" })).status, 404);
    });
  });

  test("programmatic API: same semantics, KubeApiError on failures, clones out, list sorted by namespace/name", async () => {
    await withSandbox({}, ({ sandbox }) => {
      sandbox.create("services", { metadata: { name: "b", namespace: "ns1" } });
      sandbox.create("services", { metadata: { name: "a", namespace: "ns2" } });
      sandbox.create("services", { metadata: { name: "a", namespace: "ns1" } });
      sandbox.create("revisions", { metadata: { name: "a-00001", namespace: "ns1" } });
      assert.deepEqual(sandbox.list("services").map((o) => `${o.metadata.namespace}/${o.metadata.name}`), ["ns1/a", "ns1/b", "ns2/a"]);
      assert.deepEqual(sandbox.list("services", "ns2").map((o) => o.metadata.name), ["a"]);
      assert.equal(sandbox.list("revisions")[0]!.kind, "Revision");

      assert.throws(() => sandbox.create("services", { metadata: { name: "a", namespace: "ns1" } }), (e: unknown) =>
        e instanceof KubeApiError && e.code === 409 && e.reason === "AlreadyExists");
      const got = sandbox.get("services", "ns1", "a")!;
      got.metadata.labels = { mutated: "yes" };
      assert.equal(sandbox.get("services", "ns1", "a")!.metadata.labels, undefined);

      // update() without resourceVersion is unconditional; with a stale one it conflicts.
      const u = sandbox.update("services", { metadata: { name: "a", namespace: "ns1" }, spec: { v: 1 } });
      assert.equal(u.metadata.generation, 2);
      assert.throws(() => sandbox.update("services", { metadata: { name: "a", namespace: "ns1", resourceVersion: "2" }, spec: { v: 2 } }), (e: unknown) =>
        e instanceof KubeApiError && e.code === 409 && e.reason === "Conflict");
      const s = sandbox.updateStatus("services", "ns1", "a", { ready: true });
      assert.deepEqual(s.status, { ready: true });
      assert.equal(s.metadata.generation, 2);
      const p = sandbox.patch("services", "ns1", "a", { metadata: { labels: { x: "1" } }, status: { ready: false } });
      assert.deepEqual(p.status, { ready: true });
      assert.deepEqual(p.metadata.labels, { x: "1" });
      const d = sandbox.delete("services", "ns1", "a");
      assert.equal(d.metadata.resourceVersion, sandbox.resourceVersion);
      assert.equal(sandbox.get("services", "ns1", "a"), undefined);
      assert.throws(() => sandbox.delete("services", "ns1", "a"), (e: unknown) => e instanceof KubeApiError && e.code === 404);
    });
  });
});

describe("sandbox auth, discovery and routing", () => {
  test("bearer token: 401 Status without or with a wrong token, setToken switches it, requests are recorded first", async () => {
    await withSandbox({ token: "t1" }, async ({ sandbox, api }) => {
      const col = `${api}/namespaces/default/services`;
      const none = await call(`${col}?limit=5`);
      assert.equal(none.status, 401);
      assert.deepEqual(none.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "Unauthorized",
        reason: "Unauthorized",
        code: 401,
      });
      assert.equal((await call(col, { headers: { authorization: "Bearer wrong" } })).status, 401);
      assert.equal((await call(col, { headers: { authorization: "Bearer t1" } })).status, 200);
      sandbox.setToken("t2");
      assert.equal((await call(col, { headers: { authorization: "Bearer t1" } })).status, 401);
      assert.equal((await call(col, { headers: { authorization: "Bearer t2" } })).status, 200);
      sandbox.setToken(undefined);
      assert.equal((await call(col)).status, 200);
      assert.deepEqual(sandbox.requests.map((r) => r.status), [401, 401, 200, 401, 200, 200]);
      assert.deepEqual(sandbox.requests[0]!.query, { limit: "5" });
      assert.equal(sandbox.requests[0]!.method, "GET");
      assert.equal(sandbox.requests[0]!.path, "/apis/serving.knative.dev/v1/namespaces/default/services");
      assert.equal(typeof sandbox.requests[0]!.time, "number");
    });
  });

  test("discovery, version and health endpoints; unknown paths and resources are 404 Status; wrong methods 405", async () => {
    await withSandbox({}, async ({ url, api }) => {
      const disc = await call(api);
      assert.equal(disc.status, 200);
      assert.equal(disc.body.kind, "APIResourceList");
      assert.equal(disc.body.groupVersion, "serving.knative.dev/v1");
      assert.deepEqual(disc.body.resources.map((r: { name: string }) => r.name), ["services", "services/status", "revisions", "revisions/status"]);
      assert.deepEqual(disc.body.resources[0].shortNames, ["kservice", "ksvc"]);
      const group = await call(`${url}/apis/serving.knative.dev`);
      assert.equal(group.body.preferredVersion.groupVersion, "serving.knative.dev/v1");
      const version = await call(`${url}/version`);
      assert.equal(version.body.major, "1");
      for (const p of ["/healthz", "/readyz", "/livez"]) {
        const r = await fetch(url + p);
        assert.equal(r.status, 200);
        assert.equal(await r.text(), "ok");
      }
      for (const p of [`${url}/nope`, `${api}/namespaces/default/routes`, `${api}/routes`, `${url}/apis/other.group/v1/things`]) {
        const r = await call(p);
        assert.equal(r.status, 404, p);
        assert.equal(r.body.kind, "Status");
        assert.equal(r.body.reason, "NotFound");
        assert.equal(r.body.code, 404);
      }
      const del = await call(`${api}/namespaces/default/services`, { method: "DELETE" });
      assert.equal(del.status, 405);
      assert.equal(del.body.reason, "MethodNotAllowed");
      const post = await call(`${api}/services`, { method: "POST", body: {} });
      assert.equal(post.status, 405);
    });
  });

  test("cluster-wide list spans namespaces; revisions are served like services", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "x", namespace: "b" } });
      sandbox.create("services", { metadata: { name: "y", namespace: "a" } });
      sandbox.create("revisions", { metadata: { name: "x-00001", namespace: "b" } });
      const all = await call(`${api}/services`);
      assert.equal(all.status, 200);
      assert.equal(all.body.kind, "ServiceList");
      assert.equal(all.body.apiVersion, "serving.knative.dev/v1");
      assert.deepEqual(all.body.items.map((o: { metadata: { name: string } }) => o.metadata.name), ["y", "x"]);
      assert.equal(all.body.metadata.resourceVersion, "4");
      assert.equal(all.body.metadata.continue, undefined);
      const revs = await call(`${api}/namespaces/b/revisions`);
      assert.equal(revs.body.kind, "RevisionList");
      assert.deepEqual(revs.body.items.map((o: { metadata: { name: string } }) => o.metadata.name), ["x-00001"]);
      const none = await call(`${api}/namespaces/a/revisions`);
      assert.deepEqual(none.body.items, []);
    });
  });
});
